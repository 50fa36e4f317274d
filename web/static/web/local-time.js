// Times in the visitor's time zone. The server writes every time it wants shown locally as
// <time datetime="ISO 8601" data-local-time>UTC text</time>; this script replaces the
// text by the same moment in the browser's zone, naming the zone, and keeps the UTC text
// as the element's title. Without JavaScript the UTC text stays, which says it is UTC.
(function () {
  "use strict";

  if (!window.Intl || !Intl.DateTimeFormat) {
    return;
  }
  var format = new Intl.DateTimeFormat(undefined, {
    year: "numeric",
    month: "short",
    day: "numeric",
    hour: "2-digit",
    minute: "2-digit",
    timeZoneName: "short",
  });
  document.querySelectorAll("time[data-local-time]").forEach(function (element) {
    var moment = new Date(element.getAttribute("datetime"));
    if (isNaN(moment.getTime())) {
      return;
    }
    element.title = element.textContent;
    element.textContent = format.format(moment);
    element.setAttribute("data-local-time", "shown");
  });
})();
