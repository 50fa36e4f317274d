// A running competition's page kept up to date without reloading it (tournament.html, for a
// tournament or a ladder, and score_competition.html).
//
// While the page carries data-refresh-seconds, this script fetches the same address again
// every so many seconds and copies into each region marked data-refresh-region what
// changed in it, node by node: a node left unchanged stays the same node, so the scroll
// position, the focus and a text selection outside what changed stay as they were. Once
// the page it fetched no longer asks to be refreshed (the competition is over), it shows
// that page's regions and stops. A page without JavaScript reloads itself instead
// (its <noscript> refresh).
(function () {
  "use strict";

  var root = document.querySelector("[data-refresh-seconds]");
  if (!root || !window.fetch || !window.DOMParser) {
    return;
  }
  var every = Math.max(2, Number(root.getAttribute("data-refresh-seconds")) || 5) * 1000;
  var updates = 0;

  // Make ``current`` (in this page) like ``fresh`` (in the fetched one), touching only
  // what differs.
  function morph(current, fresh) {
    if (current.nodeType !== fresh.nodeType || current.nodeName !== fresh.nodeName) {
      current.parentNode.replaceChild(document.importNode(fresh, true), current);
      return;
    }
    if (current.nodeType !== Node.ELEMENT_NODE) {
      if (current.nodeValue !== fresh.nodeValue) {
        current.nodeValue = fresh.nodeValue;
      }
      return;
    }
    if (current.isEqualNode(fresh)) {
      return;
    }
    Array.prototype.slice.call(current.attributes).forEach(function (attribute) {
      if (!fresh.hasAttribute(attribute.name)) {
        current.removeAttribute(attribute.name);
      }
    });
    Array.prototype.forEach.call(fresh.attributes, function (attribute) {
      if (current.getAttribute(attribute.name) !== attribute.value) {
        current.setAttribute(attribute.name, attribute.value);
      }
    });
    var children = current.childNodes;
    var freshChildren = fresh.childNodes;
    for (var index = 0; index < freshChildren.length; index += 1) {
      if (index < children.length) {
        morph(children[index], freshChildren[index]);
      } else {
        current.appendChild(document.importNode(freshChildren[index], true));
      }
    }
    while (children.length > freshChildren.length) {
      current.removeChild(current.lastChild);
    }
  }

  function show(fresh) {
    document.querySelectorAll("[data-refresh-region]").forEach(function (region) {
      var name = region.getAttribute("data-refresh-region");
      var replacement = fresh.querySelector('[data-refresh-region="' + name + '"]');
      if (replacement) {
        morph(region, replacement);
      }
    });
    updates += 1;
    root.setAttribute("data-refresh-updates", String(updates));
  }

  function stop() {
    root.removeAttribute("data-refresh-seconds");
    root.setAttribute("data-refresh-stopped", "true");
  }

  function later() {
    window.setTimeout(poll, every);
  }

  function poll() {
    if (document.hidden) {
      later(); // nobody is looking: ask again when the tab may be seen
      return;
    }
    window
      .fetch(window.location.href, {
        cache: "no-store",
        credentials: "same-origin",
        headers: { Accept: "text/html" },
      })
      .then(function (response) {
        if (response.status === 404) {
          stop(); // deleted, or no longer shown to this visitor: nothing more to show
          return;
        }
        if (!response.ok) {
          later(); // busy or restarting: try again at the next turn
          return;
        }
        return response.text().then(function (text) {
          var fresh = new DOMParser().parseFromString(text, "text/html");
          show(fresh);
          if (fresh.querySelector("[data-refresh-seconds]")) {
            later();
          } else {
            stop();
          }
        });
      })
      .catch(later);
  }

  later();
})();
