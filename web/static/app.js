// Quarantine console: small progressive enhancements. Every page works
// without this file; it adds copy buttons, keyboard shortcuts, confirmation
// dialogs for destructive forms, a field's value sent by another form,
// messages at required fields, the list's selection count and "select
// all", times in the browser's zone, menus that close on Escape or a
// click elsewhere, a visible message when an htmx
// request fails, focus on a list's results and their count said when its
// pager or filter brings others, and a notice in place of a reload that
// would lose what was typed.
// No framework, no inline handlers (the CSP forbids them), no eval.
(function () {
	"use strict";

	// ---- a page that answers a POST in place shows its own address ----

	// A request's page answering a refused action (409) is the request's
	// page: reload and bookmarks should reach it, not the action.
	var canonical = document.body && document.body.getAttribute("data-canonical");
	// answeredPost: this page is the answer to a form sent (refused), and
	// its fields hold what was typed then.
	var answeredPost = !!canonical && window.location.pathname !== canonical;
	if (canonical && window.location.pathname !== canonical && window.history && window.history.replaceState) {
		window.history.replaceState(null, "", canonical);
	}

	// ---- copy to clipboard: <button data-copy="text" hidden> ----

	// Copy buttons are rendered hidden because they do nothing without
	// JavaScript; reveal them in the document and in content htmx swaps in.
	function revealCopyButtons(root) {
		if (!root || !root.querySelectorAll) {
			return;
		}
		if (root.matches && root.matches("button[data-copy][hidden]")) {
			root.hidden = false;
		}
		root.querySelectorAll("button[data-copy][hidden]").forEach(function (b) {
			b.hidden = false;
		});
	}

	function copyText(text) {
		if (navigator.clipboard && window.isSecureContext) {
			return navigator.clipboard.writeText(text);
		}
		// Fallback for plain-HTTP deployments: a selected off-screen textarea.
		return new Promise(function (resolve, reject) {
			var ta = document.createElement("textarea");
			ta.value = text;
			ta.setAttribute("readonly", "");
			ta.className = "copy-buffer";
			document.body.appendChild(ta);
			ta.select();
			var ok = false;
			try {
				ok = document.execCommand("copy");
			} catch (e) {
				ok = false;
			}
			document.body.removeChild(ta);
			if (ok) {
				resolve();
			} else {
				reject(new Error("copy failed"));
			}
		});
	}

	function flashCopied(button, ok) {
		var label = ok ? "Copied" : "Copy failed";
		var prev = button.getAttribute("data-label") || button.getAttribute("aria-label") || "Copy to clipboard";
		button.setAttribute("data-label", prev);
		button.setAttribute("aria-label", label);
		button.setAttribute("title", label);
		button.classList.toggle("is-copied", ok);
		window.clearTimeout(button._copyTimer);
		button._copyTimer = window.setTimeout(function () {
			button.setAttribute("aria-label", prev);
			button.setAttribute("title", prev);
			button.classList.remove("is-copied");
		}, 1500);
	}

	document.addEventListener("click", function (e) {
		var button = e.target.closest && e.target.closest("button[data-copy]");
		if (!button) {
			return;
		}
		e.preventDefault();
		copyText(button.getAttribute("data-copy")).then(
			function () { flashCopied(button, true); },
			function () { flashCopied(button, false); }
		);
	});

	// ---- confirmation: data-confirm on a form, or on the button that submits it ----

	// Without this file every destructive form answers with a confirmation
	// page first. Here the question is asked in a dialog instead, and the
	// form is sent with confirmed=1, which the server takes as the answer.
	// Capture phase, so that a refusal also stops htmx's own submit handler.
	document.addEventListener("submit", function (e) {
		var form = e.target;
		if (!form || !form.hasAttribute) {
			return;
		}
		var by = e.submitter && e.submitter.hasAttribute("data-confirm") ? e.submitter : null;
		var asker = by || (form.hasAttribute("data-confirm") ? form : null);
		var mark = form.querySelector("input[data-confirmed]");
		if (!asker) {
			if (mark) {
				mark.remove();
			}
			return;
		}
		var question = asker.getAttribute("data-confirm");
		var n = selectedCount(form);
		if (n > 0) {
			question = question.replace("the selected dead letters", n === 1 ? "the selected dead letter" : "the " + n + " selected dead letters");
		}
		if (!window.confirm(question)) {
			e.preventDefault();
			e.stopPropagation();
			return;
		}
		if (!mark) {
			mark = document.createElement("input");
			mark.type = "hidden";
			mark.name = "confirmed";
			mark.value = "1";
			mark.setAttribute("data-confirmed", "");
			form.appendChild(mark);
		}
	}, true);

	// ---- a field another form holds: <input data-value-of="id"> ----

	// A payload form on the confirm page sends the replay's reason (and
	// the note, rates and confirmations typed there) with the edit, so
	// that the page the edit comes back to keeps them. Those fields belong
	// to the request form (a field is in one form only), so the payload
	// form holds a hidden copy of each, filled here from the
	// field when the form is sent: what is typed there now, not what the
	// page was read with. Without this file the copy is the latter.
	document.addEventListener("submit", function (e) {
		var form = e.target;
		if (!form || !form.querySelectorAll) {
			return;
		}
		form.querySelectorAll("input[data-value-of]").forEach(function (copy) {
			var field = document.getElementById(copy.getAttribute("data-value-of"));
			if (field && typeof field.value === "string") {
				copy.value = field.value;
			}
		});
	}, true);

	// ---- a required field left empty: the message at the field ----

	// The browser refuses to send a form whose required field is empty;
	// show the field's own message under it (data-required-message) in the
	// page's style instead of the browser's bubble, and keep everything
	// else (a selection) as it is.
	document.addEventListener("invalid", function (e) {
		var field = e.target;
		if (!field || !field.id) {
			return;
		}
		var slot = document.getElementById(field.id + "-error");
		if (!slot) {
			return;
		}
		e.preventDefault();
		slot.textContent = field.getAttribute("data-required-message") || field.validationMessage;
		slot.hidden = false;
		slot.setAttribute("data-testid", "field-error-" + field.id.replace(/^f-/, ""));
		field.setAttribute("aria-invalid", "true");
		if (field.closest(".field")) {
			field.closest(".field").classList.add("has-error");
		}
		field.focus();
	}, true);

	document.addEventListener("input", function (e) {
		var field = e.target;
		if (!field || !field.id || field.getAttribute("aria-invalid") !== "true" || !field.value) {
			return;
		}
		var slot = document.getElementById(field.id + "-error");
		if (slot && !slot.hasAttribute("data-server")) {
			slot.hidden = true;
			field.removeAttribute("aria-invalid");
			if (field.closest(".field")) {
				field.closest(".field").classList.remove("has-error");
			}
		}
	});

	// ---- selection of list rows: select all, how many, nothing to act on ----

	// (form.id would be the form's controls named "id": read the attribute.)
	function rowBoxes(form) {
		var id = form && form.getAttribute && form.getAttribute("id");
		if (!id) {
			return [];
		}
		return Array.prototype.slice.call(document.querySelectorAll('input[type="checkbox"][name="id"][form="' + id + '"]'));
	}

	function selectedCount(form) {
		return rowBoxes(form).filter(function (b) { return b.checked; }).length;
	}

	// syncSelection shows how many rows are ticked, enables the actions that
	// need a selection only when there is one, and keeps "select all" in step.
	function syncSelection() {
		document.querySelectorAll("form[id]").forEach(function (form) {
			var boxes = rowBoxes(form);
			if (boxes.length === 0) {
				return;
			}
			var n = boxes.filter(function (b) { return b.checked; }).length;
			var count = form.querySelector("[data-selected-count]");
			if (count) {
				count.hidden = false;
				count.textContent = n === 0 ? "None selected" : n + " selected";
				count.classList.toggle("is-empty", n === 0);
			}
			form.querySelectorAll("[data-needs-selection]").forEach(function (b) {
				b.disabled = n === 0;
				b.title = n === 0 ? "Tick dead letters first" : "";
			});
			// The table's header box, and the toolbar's on a phone (where the
			// table has no header row).
			document.querySelectorAll("[data-select-all]").forEach(function (all) {
				all.hidden = false;
				all.checked = n === boxes.length;
				all.indeterminate = n > 0 && n < boxes.length;
				var wrap = all.closest("[data-select-all-wrap]");
				if (wrap) {
					wrap.hidden = false;
				}
			});
			var label = document.querySelector("[data-select-all-label]");
			if (label) {
				label.hidden = true;
			}
		});
	}

	document.addEventListener("change", function (e) {
		var t = e.target;
		if (!t || t.type !== "checkbox") {
			return;
		}
		if (t.hasAttribute("data-select-all")) {
			var table = t.closest("table");
			var boxes = t.form ? rowBoxes(t.form) : [];
			if (boxes.length === 0 && table) {
				boxes = Array.prototype.slice.call(table.querySelectorAll('tbody input[type="checkbox"][name="id"]'));
			}
			boxes.forEach(function (b) {
				b.checked = t.checked;
			});
		}
		if (t.hasAttribute("data-select-all") || t.name === "id") {
			syncSelection();
		}
	});

	// ---- times in the browser's zone (the person's setting) ----

	// Pages write times in UTC. When the person chose their browser's zone
	// (<html data-time-zone="local">), absolute times are rewritten in it,
	// with UTC kept on hover; relative ones ("5m ago") get both on hover.
	var pad = function (n) { return (n < 10 ? "0" : "") + n; };

	function localText(d) {
		var zone = "";
		try {
			var parts = new Intl.DateTimeFormat(undefined, { timeZoneName: "short" }).formatToParts(d);
			parts.forEach(function (p) {
				if (p.type === "timeZoneName") {
					zone = " " + p.value;
				}
			});
		} catch (err) {
			zone = "";
		}
		return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " +
			pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds()) + zone;
	}

	function utcText(d) {
		return d.getUTCFullYear() + "-" + pad(d.getUTCMonth() + 1) + "-" + pad(d.getUTCDate()) + " " +
			pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes()) + ":" + pad(d.getUTCSeconds()) + " UTC";
	}

	function localTimes(root) {
		if (document.documentElement.getAttribute("data-time-zone") !== "local" || !root || !root.querySelectorAll) {
			return;
		}
		root.querySelectorAll("time[datetime]").forEach(function (el) {
			if (el.hasAttribute("data-local")) {
				return;
			}
			var d = new Date(el.getAttribute("datetime"));
			if (isNaN(d.getTime())) {
				return;
			}
			el.setAttribute("data-local", "");
			el._utc = { text: el.textContent, title: el.getAttribute("title") };
			if (el.classList.contains("ts")) {
				el.textContent = localText(d);
				el.title = utcText(d);
			} else {
				el.title = localText(d) + " · " + utcText(d);
			}
		});
	}

	// utcTimes undoes localTimes: times as the page wrote them, in UTC.
	function utcTimes(root) {
		root.querySelectorAll("time[data-local]").forEach(function (el) {
			if (!el._utc) {
				return;
			}
			el.textContent = el._utc.text;
			if (el._utc.title === null) {
				el.removeAttribute("title");
			} else {
				el.title = el._utc.title;
			}
			el.removeAttribute("data-local");
			delete el._utc;
		});
	}

	// The time zone form of a page a POST rendered saves without leaving
	// it (what was typed there stays): once saved, show the page's times
	// as chosen.
	document.addEventListener("htmx:afterRequest", function (e) {
		var form = e.detail && e.detail.elt;
		if (!form || !form.matches || !form.matches("form[data-save-in-place]") || !e.detail.xhr || e.detail.xhr.status !== 200) {
			return;
		}
		var chosen = form.querySelector('input[name="time_zone"]:checked');
		var zone = chosen && chosen.value === "local" ? "local" : "utc";
		document.documentElement.setAttribute("data-time-zone", zone);
		if (zone === "local") {
			localTimes(document);
		} else {
			utcTimes(document);
		}
	});

	// ---- keyboard shortcuts ----

	function isEditable(el) {
		if (!el || el === document.body) {
			return false;
		}
		if (el.isContentEditable) {
			return true;
		}
		var tag = el.tagName;
		if (tag === "TEXTAREA" || tag === "SELECT") {
			return true;
		}
		if (tag === "INPUT") {
			var t = (el.getAttribute("type") || "text").toLowerCase();
			return ["button", "submit", "reset", "checkbox", "radio", "image", "file", "hidden"].indexOf(t) < 0;
		}
		return false;
	}

	function keynavRows() {
		var tables = document.querySelectorAll("table[data-keynav]");
		for (var i = 0; i < tables.length; i++) {
			var rows = tables[i].querySelectorAll("tbody tr");
			if (rows.length > 0 && tables[i].offsetParent !== null) {
				return Array.prototype.slice.call(rows);
			}
		}
		return [];
	}

	function moveSelection(delta) {
		var rows = keynavRows();
		if (rows.length === 0) {
			return false;
		}
		var current = -1;
		for (var i = 0; i < rows.length; i++) {
			if (rows[i].classList.contains("is-selected")) {
				current = i;
				rows[i].classList.remove("is-selected");
				rows[i].removeAttribute("aria-selected");
			}
		}
		var next = current < 0 ? (delta > 0 ? 0 : rows.length - 1) : current + delta;
		next = Math.max(0, Math.min(rows.length - 1, next));
		var row = rows[next];
		row.classList.add("is-selected");
		row.setAttribute("aria-selected", "true");
		row.scrollIntoView({ block: "nearest" });
		return true;
	}

	function openSelection(newTab) {
		var row = document.querySelector("table[data-keynav] tbody tr.is-selected");
		if (!row) {
			return false;
		}
		var link = row.querySelector("a.row-link[href]") || row.querySelector("a[href]");
		if (!link) {
			return false;
		}
		if (newTab) {
			window.open(link.href, "_blank", "noopener");
		} else {
			link.click();
		}
		return true;
	}

	function toggleHelp() {
		var dialog = document.getElementById("shortcuts");
		if (!dialog || typeof dialog.showModal !== "function") {
			return;
		}
		if (dialog.open) {
			dialog.close();
		} else {
			dialog.showModal();
		}
	}

	document.addEventListener("keydown", function (e) {
		if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || e.isComposing) {
			return;
		}
		var target = e.target;
		if (isEditable(target)) {
			if (e.key === "Escape") {
				target.blur();
			}
			return;
		}
		var dialog = document.getElementById("shortcuts");
		if (dialog && dialog.open && e.key !== "?") {
			return;
		}
		switch (e.key) {
		case "/":
			var field = document.querySelector("[data-hotkey-focus]");
			if (field) {
				e.preventDefault();
				field.focus();
				if (typeof field.select === "function") {
					field.select();
				}
			}
			break;
		case "j":
			if (moveSelection(1)) {
				e.preventDefault();
			}
			break;
		case "k":
			if (moveSelection(-1)) {
				e.preventDefault();
			}
			break;
		case "Enter":
			// A focused link or button keeps its own Enter.
			if (target && target.closest && target.closest("a[href], button, summary")) {
				return;
			}
			if (openSelection(e.shiftKey)) {
				e.preventDefault();
			}
			break;
		case "?":
			e.preventDefault();
			toggleHelp();
			break;
		case "Escape":
			// An open menu closes first, its summary focused again.
			var menu = target && target.closest && target.closest("details.menu[open]");
			if (menu) {
				menu.open = false;
				menu.querySelector("summary").focus();
				break;
			}
			document.querySelectorAll("table[data-keynav] tr.is-selected").forEach(function (r) {
				r.classList.remove("is-selected");
				r.removeAttribute("aria-selected");
			});
			break;
		}
	});

	// ---- menus: a <details class="menu"> opens and closes by itself;
	// here a click elsewhere closes an open one too ----

	document.addEventListener("click", function (e) {
		document.querySelectorAll("details.menu[open]").forEach(function (d) {
			if (!d.contains(e.target)) {
				d.open = false;
			}
		});
	});

	// ---- htmx: show failures instead of silently doing nothing ----

	function htmxError(text) {
		var box = document.querySelector("[data-htmx-error]");
		if (!box) {
			return;
		}
		box.textContent = text;
		box.hidden = false;
	}

	// A page's own refresh (a request with the Quarantine-Poll header) that
	// finds the session ended is answered 401 without a redirect: nobody
	// may be at the machine, and the sign-in must wait for a person. The
	// message stays, and the page stops refreshing itself; a person's own
	// request is sent to the sign-in by the server (HX-Redirect).
	var sessionEnded = false;

	function isPoll(e) {
		var headers = e.detail && e.detail.requestConfig ? e.detail.requestConfig.headers : null;
		return !!(headers && headers["Quarantine-Poll"]);
	}

	document.addEventListener("htmx:beforeRequest", function (e) {
		if (sessionEnded) {
			if (isPoll(e)) {
				e.preventDefault();
			}
			return;
		}
		var box = document.querySelector("[data-htmx-error]");
		if (box) {
			box.hidden = true;
		}
	});

	document.addEventListener("htmx:responseError", function (e) {
		var status = e.detail && e.detail.xhr ? e.detail.xhr.status : 0;
		if (status === 401) {
			sessionEnded = true;
			htmxError("Your session has ended. Reload the page to sign in again.");
			return;
		}
		if (status === 429) {
			// The person's own bound on requests at once (a script, many
			// tabs): reloading adds one more; waiting is what helps.
			htmxError("You have many requests running on the console at once, so this was not done and the page was not updated. Wait a few seconds, then try again.");
			return;
		}
		htmxError("The server answered " + status + ". The page was not updated; reload it to try again.");
	});

	document.addEventListener("htmx:sendError", function () {
		htmxError("The console could not be reached. Check the connection and try again.");
	});

	// ---- a page that changed under what the person is typing ----

	// A request's page polls its progress; when the request moves on, the
	// answer asks htmx to reload the page (HX-Refresh). A reload would
	// throw away what the person is typing there (a reason to reject, a
	// phrase, a note): then the page is kept as it is, and a notice
	// ([data-page-changed]) offers the reload instead. Typed is what
	// differs from the page as it came, and, on a page that answered a
	// refused form, any text it came back with (what was typed before).
	function typedInput() {
		var fields = document.querySelectorAll("main input, main textarea, main select");
		for (var i = 0; i < fields.length; i++) {
			var f = fields[i];
			var type = (f.getAttribute("type") || "").toLowerCase();
			if (f.disabled || type === "hidden" || type === "submit" || type === "button" || type === "reset") {
				continue;
			}
			if (f.tagName === "SELECT") {
				for (var j = 0; j < f.options.length; j++) {
					if (f.options[j].selected !== f.options[j].defaultSelected) {
						return true;
					}
				}
			} else if (type === "checkbox" || type === "radio") {
				if (f.checked !== f.defaultChecked) {
					return true;
				}
			} else if (f.value !== f.defaultValue || (answeredPost && f.value !== "")) {
				return true;
			}
		}
		return false;
	}

	// The reload itself is the page's, not the person's: it goes to the
	// page's address with ?poll=1 (the server's authz.PollParam), so that,
	// like the poll that asked for it, it does not move the session's idle
	// deadline, and a session that ended is not signed in again unasked.
	document.addEventListener("htmx:beforeOnLoad", function (e) {
		var xhr = e.detail && e.detail.xhr;
		if (!xhr || xhr.getResponseHeader("HX-Refresh") !== "true") {
			return;
		}
		e.preventDefault(); // htmx's own reload would be a person's
		var notice = document.querySelector("[data-page-changed]");
		if (notice && typedInput()) {
			notice.hidden = false; // no reload, and the part that polls stays as it was
			return;
		}
		var url = new URL(window.location.href);
		url.searchParams.set("poll", "1");
		// The version of the request this page was read at (the approve or
		// reject form's): the reloaded page says so when the request changed
		// since, so that an approver does not approve or reject what they
		// have not read without being told.
		var read = document.querySelector("input[data-read-version]");
		if (read && read.value) {
			url.searchParams.set("read", read.value);
		}
		window.location.replace(url.toString());
	});

	// A page a poll reloaded shows its own address, without the marker: a
	// person's reload or bookmark of it is theirs.
	(function () {
		var url = new URL(window.location.href);
		if (url.searchParams.get("poll") === "1" && window.history && window.history.replaceState) {
			url.searchParams.delete("poll");
			url.searchParams.delete("read");
			window.history.replaceState(window.history.state, "", url.toString());
		}
	})();

	document.addEventListener("click", function (e) {
		if (e.target.closest && e.target.closest("[data-page-reload]")) {
			window.location.reload();
		}
	});

	// ---- a list's results a person asked for: focus, and the count said ----

	// The dead letters, error groups and audit lists swap only #results
	// when their pager or filter fetches another page. The link or button
	// that had focus went with the old results, so focus fell back to the
	// page and the next Tab started again at "Skip to content". After the
	// pager, or a filter sent on purpose (Apply, Enter), focus goes to the
	// results' count ([data-results-focus], tabindex -1): the next Tab
	// reaches the rows. A filter sent as the person types leaves focus in
	// the field. Either way the polite live region outside #results
	// ([data-results-status]) says the new count, and says it again once a
	// count the list fetches after the page is in. A page's own refresh (a
	// poll) does neither: nobody asked for it.
	var countAsked = false; // the count of results a person asked for is still being counted

	function resultsCause(config) {
		var elt = config.elt;
		if (elt && elt.closest && elt.closest("[data-results-pager]")) {
			return "focus";
		}
		if (elt && elt.tagName === "FORM") {
			return config.triggeringEvent && config.triggeringEvent.type === "submit" ? "focus" : "announce";
		}
		return "";
	}

	function announceResults(count) {
		var status = document.querySelector("[data-results-status]");
		if (!status) {
			return;
		}
		var text = count.textContent.replace(/\s+/g, " ").trim();
		// Emptied first and filled a moment later, so that the same count
		// (the next page of an unchanged list) is said again.
		status.textContent = "";
		window.clearTimeout(status._sayTimer);
		status._sayTimer = window.setTimeout(function () {
			status.textContent = text;
		}, 100);
	}

	document.addEventListener("htmx:afterSettle", function (e) {
		var el = e.target;
		if (!el || !e.detail || !e.detail.requestConfig || isPoll(e)) {
			return;
		}
		if (el.id === "results") {
			var cause = resultsCause(e.detail.requestConfig);
			var count = el.querySelector("[data-results-focus]");
			if (!cause || !count) {
				return;
			}
			if (cause === "focus") {
				count.focus();
			}
			countAsked = count.getAttribute("data-counted") === "false";
			announceResults(count);
		} else if (countAsked && el.matches && el.matches("[data-results-focus]")) {
			countAsked = false;
			announceResults(el);
		}
	});

	document.addEventListener("htmx:load", function (e) {
		revealCopyButtons(e.target);
		localTimes(e.target);
		syncSelection();
	});

	function ready() {
		revealCopyButtons(document);
		localTimes(document);
		syncSelection();
		// A form that came back refused opens on its summary of errors.
		var summary = document.querySelector("[data-error-summary]");
		if (summary) {
			summary.focus();
		}
	}

	if (document.readyState === "loading") {
		document.addEventListener("DOMContentLoaded", ready);
	} else {
		ready();
	}
	// Back and forward keep ticked boxes: show them as they are.
	window.addEventListener("pageshow", syncSelection);
})();
