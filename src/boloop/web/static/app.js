// boloop serve: keyboard shortcuts, the safety-limit warning and live refresh.
// The pages work without this file; it only adds convenience.
(function () {
  "use strict";
  var root = document.getElementById("study");
  var form = document.getElementById("answer-form");

  function typing(el) {
    return el && (el.tagName === "INPUT" || el.tagName === "TEXTAREA" || el.tagName === "SELECT");
  }

  function click(id) {
    var b = document.getElementById(id);
    if (b && !b.disabled) { b.click(); return true; }
    return false;
  }

  // -- single-key answers (WCAG 2.1.4): a person can switch them off (kept in this browser's
  //    localStorage); they act only where a key is nobody else's: the page itself (focus on
  //    the body) or a part of the question that is no control (a heading focused by the page).
  //    A key pressed on a link, a button, a <summary>, an audio or video player (whose arrow
  //    keys seek) or any other control is that control's, never an answer.
  var KEYS = "boloop.single-keys";
  var prefs = null;
  try { prefs = window.localStorage; } catch (e) { prefs = null; }  // storage disabled
  function keysOn() {
    try { return !prefs || prefs.getItem(KEYS) !== "off"; } catch (e) { return true; }
  }
  var INTERACTIVE = /^(A|BUTTON|INPUT|TEXTAREA|SELECT|OPTION|SUMMARY|DETAILS|AUDIO|VIDEO|IFRAME|OBJECT|EMBED|LABEL)$/;
  function keyIsOurs(el, arrow) {
    if (!el || el === document.body || el === document.documentElement) { return true; }
    if (arrow) { return false; }  // an arrow anywhere but the page itself scrolls or seeks
    var query = document.getElementById("query");
    // a control is focusable by Tab (tabIndex >= 0); the page's own focus targets are -1
    if (el.tabIndex >= 0 || el.isContentEditable || INTERACTIVE.test(el.tagName)) { return false; }
    return !!(query && query.contains(el));
  }
  // the buttons say their keys (aria-keyshortcuts) while the keys are on, and the hints show
  function showKeys(on) {
    var hints = document.querySelectorAll("[data-keys]");
    for (var i = 0; i < hints.length; i++) {
      if (on) { hints[i].setAttribute("aria-keyshortcuts", hints[i].getAttribute("data-keys")); }
      else { hints[i].removeAttribute("aria-keyshortcuts"); }
      var kbds = hints[i].querySelectorAll("kbd.key");
      for (var j = 0; j < kbds.length; j++) { kbds[j].hidden = !on; }
    }
  }
  var keysSwitch = document.getElementById("keys-on");
  if (keysSwitch) {
    keysSwitch.checked = keysOn();
    var switchBox = document.getElementById("keys-switch");
    if (switchBox) { switchBox.hidden = false; }  // without this script there are no keys
    keysSwitch.addEventListener("change", function () {
      try {
        if (keysSwitch.checked) { prefs.removeItem(KEYS); } else { prefs.setItem(KEYS, "off"); }
      } catch (e) { /* not kept: this page still follows the switch */ }
      showKeys(keysSwitch.checked);
    });
  }
  showKeys(keysOn() && !(keysSwitch && !keysSwitch.checked));

  // -- keys: y/n (label), a/b or left/right (compare), u (undo); Enter submits an evaluate form
  document.addEventListener("keydown", function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || ev.repeat || ev.defaultPrevented) { return; }
    if (keysSwitch ? !keysSwitch.checked : !keysOn()) { return; }
    var k = ev.key;
    var arrow = k === "ArrowLeft" || k === "ArrowRight";
    if (typing(document.activeElement) || !keyIsOurs(document.activeElement, arrow)) { return; }
    var kind = form ? form.getAttribute("data-kind") : null;
    var done = false;
    if (kind === "label" && (k === "y" || k === "Y")) { done = click("btn-accept"); }
    else if (kind === "label" && (k === "n" || k === "N")) { done = click("btn-reject"); }
    else if (kind === "compare" && (k === "a" || k === "A" || k === "ArrowLeft")) { done = click("btn-a"); }
    else if (kind === "compare" && (k === "b" || k === "B" || k === "ArrowRight")) { done = click("btn-b"); }
    else if (k === "u" || k === "U") { done = click("btn-undo"); }
    if (done) { ev.preventDefault(); }
  });

  // -- where the focus goes when a page opens after something was done (WCAG 2.4.3, 4.1.3): a
  //    refused answer's page focuses its warning (what went wrong is read first); after an
  //    answer stored on a label or duel page, the next question's heading, which says (its
  //    description) that the answer was stored; the keys answer from there. An evaluate page
  //    focuses its field itself (autofocus), the first refused one after an error.
  var qTitle = document.getElementById("q-title");
  var flashBox = document.getElementById("flash");
  var refusedWarning = document.getElementById("warning");
  var kindNow = form ? form.getAttribute("data-kind") : null;
  if (refusedWarning && refusedWarning.getAttribute("tabindex") === "-1") {
    refusedWarning.focus();
  } else if (flashBox && qTitle && (kindNow === "label" || kindNow === "compare")) {
    qTitle.setAttribute("aria-describedby", "flash");
    qTitle.focus();
  }

  // -- undo asks first, naming what it withdraws (query, answer, when, its note) and whose it
  //    is, as far as this server saw it stored (data-last-by: "this" browser, an "other" one,
  //    or "" when it did not: the command line, the API, a program, before a restart)
  var undo = document.getElementById("undo-form");
  if (undo) {
    undo.addEventListener("submit", function (ev) {
      var last = undo.getAttribute("data-last") || "the last answer";
      var by = undo.getAttribute("data-last-by");
      var msg = "Withdraw the last answer, " + last + "?";
      if (undo.hasAttribute("data-refused")) {
        msg += "\n\nThis is NOT your answer: yours was not stored. This one was given " +
          "elsewhere (another page, person or program).";
      } else if (by === "other") {
        msg += "\n\nThis answer was NOT stored from this browser: it came from another " +
          "browser (another person's page). Withdraw it only if you mean to withdraw theirs: " +
          "their page will say that it was withdrawn.";
      } else if (by === "this") {
        msg += "\n\nIt was stored from this browser.";
      } else {
        msg += "\n\nThis server did not see it stored from this browser (it may come from the " +
          "command line, the API, a program, or a page before the server restarted): check " +
          "that it is the one you mean.";
      }
      msg += "\n\nIts query becomes the open query again.";
      if (!window.confirm(msg)) {
        ev.preventDefault();
      }
    });
  }

  // -- a notice of what was just done ("answer stored", "your answer was withdrawn") is said
  //    once: drop the ?done=... (or ?since=...) that carried it, so a reload or Back does not
  //    say it again
  var withdrawnYours = document.getElementById("withdrawn-yours");
  if (withdrawnYours) { withdrawnYours.focus(); }
  if (document.querySelector(".flash, #withdrawn-yours") && window.location.search &&
      window.history && window.history.replaceState) {
    window.history.replaceState(window.history.state, "", window.location.pathname + window.location.hash);
  }

  // -- the study's own address: a page that answers a form's POST (a refused answer, an undo
  //    that withdrew nothing) is at .../tell or .../undo; it takes the study's address, so a
  //    reload or the live refresh GETs the study's page (the open query) and never sends the
  //    form again
  var pageUrl = root ? root.getAttribute("data-page-url") : null;
  if (pageUrl && window.location.pathname !== pageUrl && window.history && window.history.replaceState) {
    window.history.replaceState(null, "", pageUrl + window.location.hash);
  }

  // a plain decimal number as typed ("85", "-1.5e2", or with a single decimal comma "1,62" as
  // the server reads it: boloop.study.answers.read_number), else NaN: "85 C" is no number here,
  // nor an ambiguous "1,620" (the server refuses both and says why), so no question about the
  // limit is asked for them
  function plainNumber(text) {
    var t = String(text).trim();
    if (/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(t)) { return parseFloat(t); }
    if (/^[+-]?\d*,\d+$/.test(t) && !/^[+-]?[1-9]\d{0,2},\d{3}$/.test(t)) {
      return parseFloat(t.replace(",", "."));
    }
    return NaN;
  }

  // -- safe family: warn before storing g above the limit
  if (form && form.hasAttribute("data-limit-h")) {
    form.addEventListener("submit", function (ev) {
      var out = form.getAttribute("data-limit-output");
      // the measured value by the name (and unit) the space file gives it, as the page says it
      var label = form.getAttribute("data-limit-label") || out;
      var h = parseFloat(form.getAttribute("data-limit-h"));
      var field = form.querySelector('[name="out.' + out + '"]');
      var confirmBox = document.getElementById("confirm-over");
      if (!field || (confirmBox && confirmBox.checked)) { return; }
      var g = plainNumber(field.value);
      if (isFinite(g) && g > h) {
        var msg = label + " = " + g + " is above the safety limit " + h +
          ". The method only proposes settings it certified safe: check the measurement. Store it as measured?";
        if (window.confirm(msg)) {
          var hidden = document.createElement("input");
          hidden.type = "hidden"; hidden.name = "confirm_over_limit"; hidden.value = field.value.trim();
          form.appendChild(hidden);
        } else {
          ev.preventDefault();
          field.focus();
        }
      }
    });
  }

  // -- what is typed into the answer form is kept in this tab's sessionStorage, by study and
  //    query, until that query is no longer open: a page loaded again (Back after a failed
  //    send, a reload, a restart of the server) gets it back; only what a person types (no
  //    hidden field, no confirmation box)
  var openId = form ? (form.querySelector('input[name="query_id"]') || {}).value : null;
  var TYPED = "boloop.typed:" + (pageUrl || "") + "#";
  var store = null;
  try { store = window.sessionStorage; } catch (e) { store = null; }  // storage disabled
  function typedFields() {
    return form ? form.querySelectorAll('input:not([type="hidden"]):not([type="checkbox"])') : [];
  }
  function keep() {
    if (!store || !openId) { return; }
    var fields = typedFields(), values = {}, any = false;
    for (var i = 0; i < fields.length; i++) {
      values[fields[i].name] = fields[i].value;
      any = any || fields[i].value !== "";
    }
    try {
      if (any) { store.setItem(TYPED + openId, JSON.stringify(values)); }
      else { store.removeItem(TYPED + openId); }
    } catch (e) { /* full or disabled: the form itself still holds it */ }
  }
  function forget(stillOpen) {  // every kept query of this study but the ones still open
    if (!store) { return; }
    try {
      for (var i = store.length - 1; i >= 0; i--) {
        var k = store.key(i);
        if (k && k.indexOf(TYPED) === 0 && stillOpen.indexOf(k.slice(TYPED.length)) < 0) {
          store.removeItem(k);
        }
      }
    } catch (e) { /* nothing kept */ }
  }
  if (form && openId && store) {
    var kept = null;
    try { kept = JSON.parse(store.getItem(TYPED + openId) || "null"); } catch (e) { kept = null; }
    var fields = typedFields(), blank = true;
    for (var i = 0; i < fields.length; i++) { blank = blank && fields[i].value === ""; }
    // the server's own values (a refused typo sent back) win; an empty form gets them back
    if (kept && blank) {
      var back = false;
      for (var j = 0; j < fields.length; j++) {
        if (typeof kept[fields[j].name] === "string" && kept[fields[j].name] !== "") {
          fields[j].value = kept[fields[j].name];
          back = true;
        }
      }
      if (back) {
        var restored = document.createElement("p");
        restored.id = "restored";
        restored.className = "warning";
        restored.setAttribute("role", "status");
        restored.textContent = "What you typed for query " + openId + " before is back in the " +
          "form (kept by this browser tab): it is NOT stored yet. Check it and store it.";
        form.insertBefore(restored, form.firstChild);
      }
    }
    form.addEventListener("input", keep);
    form.addEventListener("change", keep);
    // a page loaded afresh shows the open query: the others' kept values are done with (stored,
    // or their query closed); a page brought back by Back may be an old copy, and says nothing
    var navEntry = window.performance && window.performance.getEntriesByType ?
      window.performance.getEntriesByType("navigation")[0] : null;
    if (!(navEntry && navEntry.type === "back_forward")) { forget([openId]); }
  } else if (!form && root && store) {
    forget([]);  // a page with no open query: every kept value's query was answered or closed
  }

  // -- live refresh: poll the study's state; reload when the study changed elsewhere; say so
  //    while the server cannot be reached, and then hold an answer back instead of sending it
  //    to nowhere (the browser's error page, and what was typed gone)
  if (root) {
    var version = root.getAttribute("data-version");
    // the studies that continue this one, as the page was drawn (a continuation writes nothing
    // to this study's log: the poll says it in continued_as, not by its version)
    var continuedHere = "[]";
    try { continuedHere = JSON.stringify(JSON.parse(root.getAttribute("data-continued") || "[]")); }
    catch (e) { continuedHere = "[]"; }
    var answeredHere = parseInt(root.getAttribute("data-answered"), 10);
    var ms = parseInt(root.getAttribute("data-poll-ms"), 10);
    var live = document.getElementById("live");
    var submitting = false;
    var unreachable = false;  // the last poll got no answer from this server
    var held = null;  // the message of a form held back while the server cannot be reached
    var heldForm = null;
    // a refused answer shown back with what was sent: never reloaded away under the reader
    var sentBox = document.getElementById("sent");
    var keepNotice = !!sentBox;
    function answerButton(f) {
      return f !== form ? "undo" : (form.getAttribute("data-kind") === "evaluate" ? "store" :
        "your answer's button");
    }
    // while the server cannot be reached a form is held here, not sent: sent, the browser
    // would show its own error page, and Back an empty form
    document.addEventListener("submit", function (ev) {
      if (!unreachable) { return; }
      ev.preventDefault();
      ev.stopImmediatePropagation();  // no safety-limit question, no "submitting"
      var f = ev.target;
      if (!held) {
        held = document.createElement("p");
        held.id = "held";
        held.className = "warning";
        held.setAttribute("role", "alert");
      }
      heldForm = f;
      var after = f.querySelector(".buttons") || f;
      after.parentNode.insertBefore(held, after.nextSibling);
      held.textContent = f === form ?
        "NOT sent: the server cannot be reached (sent now, the answer would be lost). What you " +
        "typed stays here: press " + answerButton(f) + " again once the notice " +
        "\u201cCannot reach the server\u201d (below the form) goes away; the page keeps checking." :
        "Nothing was withdrawn: the server cannot be reached. Undo again once it is back.";
      held.hidden = false;
      if (held.scrollIntoView) { held.scrollIntoView({ block: "nearest" }); }
      if (ms > 0 && window.fetch) { poll(); }
    }, true);
    // any form being sent (answer, undo) navigates by itself: stop reloading under it
    document.addEventListener("submit", function (ev) {
      if (!ev.defaultPrevented) { submitting = true; }
    });
    // a person moving through the page (Tab, a screen reader's quick keys or virtual cursor, a
    // click) is at work there: while the focus is on a control other than the field the page
    // focuses itself (autofocus; its other focus targets have tabIndex -1), such as a link, a
    // player or a button, or while a table of numbers is open, the page is "touched" and says
    // what changed instead of reloading under them
    function focusOnControl() {
      var el = document.activeElement;
      var moved = !!el && el !== document.body && el !== document.documentElement &&
        el.tabIndex >= 0 && !el.hasAttribute("autofocus");
      return moved || !!document.querySelector("details.numbers[open]");
    }
    function untouched() {  // nothing typed or ticked in the answer form
      if (!form) { return true; }
      var inputs = form.querySelectorAll("input:not([type=hidden])");
      for (var i = 0; i < inputs.length; i++) {
        if (inputs[i].type === "checkbox" ? inputs[i].checked : inputs[i].value) { return false; }
      }
      return true;
    }
    var offline = document.getElementById("offline");
    // the page's own text says the server cannot be reached; its database down is said here
    var serverDown = offline ? offline.textContent : "";
    var databaseDown = "The database is unreachable: answers cannot be stored until it is back. " +
      "What you typed stays in the form; submit it when this notice goes away (the page keeps checking).";
    // the study is no longer on this server (migrate --undo removed the copy it showed)
    var studyGone = "This study is no longer on this server (it was removed from this storage, " +
      "e.g. by boloop study migrate --undo): an answer sent here is not stored. What you typed " +
      "stays on this page; ask the study's owner where to answer it now.";
    // a token server that no longer knows this browser (restarted with a new token): its own
    // notice, with a login in a new tab (this page keeps what is typed)
    var relogin = document.getElementById("relogin");
    var LOGIN = {};
    function notice(text) {  // null: all is well; LOGIN: log in again
      if (relogin) { relogin.hidden = text !== LOGIN; }
      if (text === LOGIN) { text = relogin ? null : serverDown; }
      if (!offline) { return; }
      if (text !== null && offline.textContent !== text) { offline.textContent = text; }
      offline.hidden = text === null;
    }
    function reached() {  // this server answered: a held form can be sent now
      unreachable = false;
      if (held && !held.hidden) {
        held.textContent = heldForm === form ?
          "The server can be reached again. Your answer was NOT sent yet: press " +
          answerButton(heldForm) + " to send it." :
          "The server can be reached again: nothing was withdrawn; undo again if you mean it.";
      }
    }
    function continuedNow(s) { return JSON.stringify(s.continued_as || []); }
    // what changed, as the poll's state tells it against this page's: this browser's answer
    // withdrawn by an undo elsewhere (the server's words), the study continued as another, the
    // open query went on (answers given elsewhere) or back (an answer withdrawn), or this page's
    // query is still open
    function changed(s) {
      if (s.moved) {  // a migrate made this copy read-only: where to answer
        return "This study was moved to " + s.moved + " (boloop study migrate): an answer " +
          "sent here is not stored; answer it there." +
          (openId && !untouched() ? " What you typed stays on this page." : "");
      }
      var said = (s.withdrawn_yours || []).join(" ");
      if (String(s.version) === version) { return said; }  // continued only: said apart
      return (said ? said + " " : "") + answersChanged(s);
    }
    function answersChanged(s) {
      var n = parseInt(s.answered, 10);
      var open = s.open_query === null || s.open_query === undefined ? null : String(s.open_query);
      var elsewhere = " elsewhere (another page, person or program)";
      var now = open === null ? "" : " The open query is now " + open + ".";
      if (openId && open === openId) {
        return "The study changed" + elsewhere + ", but query " + openId + " is still open: " +
          "your answer to it can still be stored.";
      }
      var gone = openId ? ": query " + openId + " is no longer open." : ".";
      var what;
      if (n > answeredHere) {
        what = (n - answeredHere === 1 ? "An answer was given" : (n - answeredHere) +
          " answers were given") + elsewhere + gone;
      } else if (n < answeredHere) {
        what = (answeredHere - n === 1 ? "An answer was withdrawn (undo)" : (answeredHere - n) +
          " answers were withdrawn (undo)") + elsewhere + gone;
      } else {
        what = "Answers were withdrawn and given" + elsewhere + gone;
      }
      return what + now + (openId && !untouched() ? " What you typed here is not stored." : "");
    }
    // the notice the page shows when it is drawn after a continuation, with links to the
    // studies that continue it (built again only when they change)
    function showContinued(s) {
      var names = s.continued_as || [];
      var box = document.getElementById("live-continued");
      if (!names.length || continuedNow(s) === continuedHere) {
        if (box) { box.hidden = true; }
        return;
      }
      if (!box) {
        box = document.createElement("span");
        box.id = "live-continued";
        live.insertBefore(box, live.firstChild);
      }
      if (box.getAttribute("data-names") !== continuedNow(s)) {
        box.textContent = "This study was continued as ";
        for (var i = 0; i < names.length; i++) {
          if (i) { box.appendChild(document.createTextNode(", ")); }
          var a = document.createElement("a");
          a.href = "/studies/" + encodeURIComponent(names[i]);
          a.textContent = names[i];
          box.appendChild(a);
        }
        box.appendChild(document.createTextNode(", which took all its answers: answer there. " +
          "Answers given here now are not carried over." +
          (openId && !untouched() ? " What you typed here is not stored: stored here, it " +
            "would not be carried over either." : "") + " "));
        box.setAttribute("data-names", continuedNow(s));
      }
      box.hidden = false;
    }
    function showChanged(s) {
      if (!live) { return; }
      var text = changed(s);
      if (keepNotice) {
        text += " This page does not reload by itself while it shows your answer that was " +
          "not stored: write it down, then dismiss it or reload.";
      }
      // built once, then only its words change (every poll sees the change again)
      var words = document.getElementById("live-text");
      if (!words) {
        live.textContent = "";
        words = document.createElement("span");
        words.id = "live-text";
        var again = document.createElement("button");
        again.type = "button";
        again.id = "live-reload";
        again.textContent = "reload: show the study as it is now";
        again.addEventListener("click", function () { window.location.replace(reloadUrl()); });
        live.appendChild(words);
        live.appendChild(document.createTextNode(" "));
        live.appendChild(again);
      }
      if (words.textContent !== text) { words.textContent = text; }
      showContinued(s);
      live.hidden = false;
    }
    // the page drawn afresh; after this browser's answer was withdrawn elsewhere, it says so
    // (?since: the withdrawals after this page's version)
    var withdrawnSeen = false;
    function reloadUrl() {
      return withdrawnSeen ? pageUrl + "?since=" + encodeURIComponent(version) : pageUrl;
    }
    function poll() {
      var stateUrl = root.getAttribute("data-state-url");
      if (submitting || !stateUrl) { return; }  // an empty state URL: the live refresh is off
      stateUrl += (stateUrl.indexOf("?") < 0 ? "?" : "&") + "since=" + encodeURIComponent(version);
      fetch(stateUrl, { credentials: "same-origin", cache: "no-store" })
        .then(function (r) {
          // this server says so in JSON (401); a login page reached by a redirect is the same
          if (r.status === 401 || (r.redirected && /\/login(\?|$)/.test(r.url))) {
            return r.json().catch(function () { return null; }).then(function (b) {
              if (r.redirected || (b && b.error === "login_required")) {
                reached();
                notice(LOGIN);
                return null;
              }
              throw new Error("unreachable");
            });
          }
          if (r.status === 503) {
            // this server with its database down says so in JSON; else a proxy's 503
            return r.json().catch(function () { return null; }).then(function (b) {
              if (b && b.error === "storage_unavailable") { reached(); notice(databaseDown); return null; }
              throw new Error("unreachable");
            });
          }
          // no answer, or a proxy's 502/504 for a server that is down
          if (r.status >= 502 && r.status <= 504) { throw new Error("unreachable"); }
          if (r.status === 404) { reached(); notice(studyGone); return null; }
          reached();
          notice(null);
          return r.ok ? r.json() : null;
        })
        .then(function (s) {
          if (!s) { return; }
          if (s.open_query !== null && s.open_query !== undefined) {
            forget(openId ? [String(s.open_query), openId] : [String(s.open_query)]);
          } else {  // no query open: none but this page's own form is still to be answered
            forget(openId ? [openId] : []);
          }
          if (String(s.version) === version && continuedNow(s) === continuedHere) { return; }
          if (s.withdrawn_yours && s.withdrawn_yours.length) { withdrawnSeen = true; }
          if (untouched() && !focusOnControl() && !keepNotice) {
            window.location.replace(reloadUrl());
          } else {
            showChanged(s);
          }
        })
        .catch(function () {
          unreachable = true;
          notice(serverDown);  /* and try again at the next poll */
        });
    }
    var dismiss = document.getElementById("sent-dismiss");
    if (dismiss && sentBox) {
      dismiss.hidden = false;
      dismiss.addEventListener("click", function () {
        sentBox.hidden = true;
        var warning = document.getElementById("warning");
        if (warning) { warning.hidden = true; }
        keepNotice = false;
        if (live) { live.hidden = true; }
        // the focus was on the button just hidden: on to the question (else it falls to the body)
        var question = document.getElementById("q-title");
        if (question) { question.focus(); }
        if (ms > 0 && window.fetch) { poll(); }  // a change seen meanwhile reloads now
      });
    }
    if (ms > 0 && window.fetch) { window.setInterval(poll, ms); }
    // Back (or Forward) to this page: restored from the back-forward cache, its script state is
    // as it was left. Left by sending a form (an answer, an undo), its query is answered and
    // what is typed was sent: show the study as it is now. Else check for answers at once.
    window.addEventListener("pageshow", function (ev) {
      if (!ev.persisted) { return; }
      if (submitting) {
        submitting = false;
        window.location.replace(pageUrl);
      } else if (ms > 0 && window.fetch) {
        poll();
      }
    });
    // ... and loaded again (from the HTTP cache) by Back: check at once, not after a poll's wait
    var nav = window.performance && window.performance.getEntriesByType ?
      window.performance.getEntriesByType("navigation")[0] : null;
    if (nav && nav.type === "back_forward" && ms > 0 && window.fetch) { poll(); }
  }

  // -- a tap (or click) on a drawn point, bar or area of a picture shows its value (its
  //    tooltip, which a phone cannot hover over) under the picture
  function ownTitle(el) {
    for (var c = el.firstElementChild; c; c = c.nextElementSibling) {
      if (c.tagName.toLowerCase() === "title") { return c.textContent; }
    }
    return null;
  }
  var figures = document.querySelectorAll(".pictures figure");
  for (var f = 0; f < figures.length; f++) {
    figures[f].addEventListener("click", function (ev) {
      var fig = ev.currentTarget;
      var text = null;
      for (var el = ev.target; el && el !== fig && text === null; el = el.parentNode) {
        if (el.tagName && el.tagName.toLowerCase() === "svg") { break; }
        text = ownTitle(el);
      }
      var shown = fig.querySelector(".tapped");
      if (text === null) { if (shown) { shown.hidden = true; } return; }
      if (!shown) {
        shown = document.createElement("p");
        shown.className = "tapped";
        shown.setAttribute("role", "status");
        fig.insertBefore(shown, fig.querySelector("figcaption"));
      }
      shown.textContent = text;
      shown.hidden = false;
    });
  }
  // -- the safe set's growth in numbers: a page of its own (the growth is a replay of the log,
  //    which this page never waits for); its table "the numbers", opened, shows it in place
  //    (without this script the table holds a link to that page)
  var growthBox = document.getElementById("numbers-growth");
  if (growthBox && window.fetch && window.DOMParser) {
    growthBox.addEventListener("toggle", function () {
      if (!growthBox.open || growthBox.hasAttribute("data-loaded")) { return; }
      growthBox.setAttribute("data-loaded", "");
      fetch(growthBox.getAttribute("data-src"), { credentials: "same-origin" })
        .then(function (r) { if (!r.ok) { throw new Error(String(r.status)); } return r.text(); })
        .then(function (html) {
          var got = new DOMParser().parseFromString(html, "text/html")
            .getElementById("growth-numbers");
          if (!got) { throw new Error("no numbers"); }
          growthBox.appendChild(document.importNode(got, true));
          var link = document.getElementById("growth-numbers-link");
          if (link) { link.hidden = true; }
          var n = got.querySelectorAll("tbody tr").length;
          growthBox.querySelector("summary").textContent = "the numbers (" + n + ")";
        })
        .catch(function () { growthBox.removeAttribute("data-loaded"); });  // the link stays
    });
  }

  // -- a live notice (changed elsewhere, cannot reach the server, log in again) is shown below
  //    the form, where it moves no button; on a phone the form may fill the screen and the
  //    notice be out of view (a screen reader says it: it is a live region). While it is, a
  //    link pinned to the window's bottom edge (the top one where that would cover a control
  //    of the form) says that there is one and goes to it: fixed, it moves nothing, and the
  //    page does not scroll by itself under a finger about to press a button
  var noticesBox = document.getElementById("notices");
  if (noticesBox && window.MutationObserver) {
    var peek = document.createElement("a");
    peek.id = "notice-peek";
    peek.className = "notice-peek";
    peek.href = "#notices";
    peek.hidden = true;
    document.body.appendChild(peek);
    var shownNotice = function () {
      for (var c = noticesBox.firstElementChild; c; c = c.nextElementSibling) {
        if (!c.hidden && c.getClientRects().length) { return c; }
      }
      return null;
    };
    var overlaps = function (a, b) {
      return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
    };
    var updatePeek = function () {
      var n = shownNotice();
      var r = n ? n.getBoundingClientRect() : null;
      if (!r || (r.top < window.innerHeight && r.bottom > 0)) { peek.hidden = true; return; }
      var below = r.top >= window.innerHeight;
      var words = (n.textContent || "").replace(/\s+/g, " ").trim();
      if (words.length > 44) { words = words.slice(0, 44).replace(/\s+\S*$/, "") + "\u2026"; }
      var text = (below ? "\u2193 Notice below: " : "\u2191 Notice above: ") + words;
      if (peek.textContent !== text) { peek.textContent = text; }
      peek.hidden = false;
      var controls = document.querySelectorAll(
        "#answer-form button:not([hidden]), #answer-form input:not([type=hidden]), #btn-undo");
      var edges = ["bottom", "top"];
      for (var e = 0; e < edges.length; e++) {
        peek.style.top = edges[e] === "top" ? "0" : "auto";
        peek.style.bottom = edges[e] === "bottom" ? "0" : "auto";
        var p = peek.getBoundingClientRect();
        var free = true;
        for (var k = 0; k < controls.length && free; k++) {
          if (overlaps(p, controls[k].getBoundingClientRect())) { free = false; }
        }
        if (free) { return; }
      }
      peek.hidden = true;  // a window too small to point to it without covering a control
    };
    peek.addEventListener("click", function (ev) {
      var n = shownNotice();
      if (!n) { return; }
      ev.preventDefault();
      n.scrollIntoView({ block: "center" });
      // the keyboard and a screen reader go there too (tabIndex -1: a focus target, not a
      // control, so the live refresh does not count it as a person at work elsewhere)
      if (!n.hasAttribute("tabindex")) { n.setAttribute("tabindex", "-1"); }
      n.focus({ preventScroll: true });
    });
    new MutationObserver(updatePeek).observe(noticesBox, {
      attributes: true, childList: true, subtree: true, characterData: true });
    window.addEventListener("scroll", updatePeek, { passive: true });
    window.addEventListener("resize", updatePeek);
  }
})();
