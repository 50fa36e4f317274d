// An invitation link is /c/<slug>/join/#<code>: the code travels in the fragment, which
// the browser never sends, so no server's log holds it. This copies it into the form's
// field (whose POST the server reads) and drops it from the address bar and history.
(function () {
  "use strict";

  var field = document.querySelector("[data-join-form] input[name=code]");
  var code = window.location.hash.replace(/^#/, "");
  if (!field || !code) {
    return;
  }
  field.value = decodeURIComponent(code);
  if (window.history && window.history.replaceState) {
    window.history.replaceState(null, "", window.location.pathname + window.location.search);
  }
})();
