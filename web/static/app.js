// Quarantine console: small progressive enhancements. Every page works
// without this file; it adds copy buttons, keyboard shortcuts, confirmation
// of destructive forms and a visible message when an htmx request fails.
// No framework, no inline handlers (the CSP forbids them), no eval.
(function () {
	"use strict";

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

	// ---- confirmation: <form data-confirm="Remove …?"> ----

	// Capture phase, so that a refusal also stops htmx's own submit handler.
	document.addEventListener("submit", function (e) {
		var form = e.target;
		if (!form || !form.hasAttribute || !form.hasAttribute("data-confirm")) {
			return;
		}
		if (!window.confirm(form.getAttribute("data-confirm"))) {
			e.preventDefault();
			e.stopPropagation();
		}
	}, true);

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
			document.querySelectorAll("table[data-keynav] tr.is-selected").forEach(function (r) {
				r.classList.remove("is-selected");
				r.removeAttribute("aria-selected");
			});
			break;
		}
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

	document.addEventListener("htmx:beforeRequest", function () {
		var box = document.querySelector("[data-htmx-error]");
		if (box) {
			box.hidden = true;
		}
	});

	document.addEventListener("htmx:responseError", function (e) {
		var status = e.detail && e.detail.xhr ? e.detail.xhr.status : 0;
		if (status === 401) {
			htmxError("Your session has ended. Reload the page to sign in again.");
			return;
		}
		htmxError("The server answered " + status + ". The page was not updated; reload it to try again.");
	});

	document.addEventListener("htmx:sendError", function () {
		htmxError("The console could not be reached. Check the connection and try again.");
	});

	document.addEventListener("htmx:load", function (e) {
		revealCopyButtons(e.target);
	});

	if (document.readyState === "loading") {
		document.addEventListener("DOMContentLoaded", function () {
			revealCopyButtons(document);
		});
	} else {
		revealCopyButtons(document);
	}
})();
