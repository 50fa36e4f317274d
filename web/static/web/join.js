// An invitation link is /c/<slug>/join/#<code>: the code travels in the fragment, which
// the browser never sends, so no server's log holds it. This copies it into the form's
// field (whose POST the server reads) and drops it from the address bar and history. A
// visitor who must log in first loses the fragment on the way (the login's redirects do
// not carry it): the tab's sessionStorage keeps the code until they come back.
(function () {
  "use strict";

  var field = document.querySelector("[data-join-form] input[name=code]");
  if (!field) {
    return;
  }
  var key = "arena-invitation:" + window.location.pathname;
  var code = window.location.hash.replace(/^#/, "");
  try {
    code = decodeURIComponent(code);
  } catch (error) {
    // a mangled link (a stray "%"): the code as it came; the server says if it is wrong
  }
  var storage = null;
  try {
    storage = window.sessionStorage;
  } catch (error) {
    storage = null; // storage refused (privacy settings): the fragment alone then
  }
  if (code) {
    if (storage) {
      storage.setItem(key, code);
    }
    if (window.history && window.history.replaceState) {
      window.history.replaceState(null, "", window.location.pathname + window.location.search);
    }
  } else if (storage) {
    code = storage.getItem(key) || "";
  }
  if (code && !field.value) {
    field.value = code;
  }
  var form = field.form;
  if (form && storage) {
    form.addEventListener("submit", function () {
      storage.removeItem(key);
    });
  }
})();
