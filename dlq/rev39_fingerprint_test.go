package dlq

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pyTraceback is a Python traceback as the interpreter prints it,
// outermost frame first, for a failure in fn of file at line.
func pyTraceback(file string, line, fn, source, exception string) string {
	return "Traceback (most recent call last):\n" +
		"  File \"/app/worker.py\", line 88, in <module>\n    main()\n" +
		"  File \"/app/worker.py\", line 80, in main\n    handle(msg)\n" +
		"  File \"" + file + "\", line " + line + ", in " + fn + "\n    " + source + "\n" +
		exception + "\n"
}

// TestRev39PythonTracebacksGroupByTheirInnermostFrames (review 39): a
// Python traceback is printed outermost first under a "Traceback (most
// recent call last):" line, and its file paths are quoted. Taking its
// first four lines as the top of the stack took the header, the
// <module> and main frames, none of them where it failed, and quoted
// paths normalised to <q>: every KeyError in a worker was one group,
// sharing triage, snoozes, fix markers and group actions.
func TestRev39PythonTracebacksGroupByTheirInnermostFrames(t *testing.T) {
	t.Parallel()
	charge := pyTraceback("/app/billing/charge.py", "12", "charge_card", `amount = payload["amount"]`, "KeyError: 'amount'")
	reserve := pyTraceback("/app/inventory/reserve.py", "40", "reserve_stock", `sku = payload["sku"]`, "KeyError: 'sku'")

	t.Run("OtherPlaceOtherGroup", func(t *testing.T) {
		t.Parallel()
		assert.NotEqual(t, Fingerprint(ClassPermanent, "KeyError: 'amount'", charge), Fingerprint(ClassPermanent, "KeyError: 'sku'", reserve))
		// Same file, another function: another problem.
		refund := pyTraceback("/app/billing/charge.py", "12", "refund_card", `amount = payload["amount"]`, "KeyError: 'amount'")
		assert.NotEqual(t, Fingerprint(ClassPermanent, "KeyError: 'amount'", charge), Fingerprint(ClassPermanent, "KeyError: 'amount'", refund))
	})

	t.Run("SamePlaceOneGroup", func(t *testing.T) {
		t.Parallel()
		// Another line number (the file was edited above the failure),
		// another quoted value, without its source line (a deployment
		// without sources) and with Python 3.11's caret line under it.
		moved := pyTraceback("/app/billing/charge.py", "14", "charge_card", `amount = payload["total"]`, "KeyError: 'total'")
		noSource := strings.Replace(charge, "    amount = payload[\"amount\"]\n", "", 1)
		carets := strings.Replace(charge, "payload[\"amount\"]\n", "payload[\"amount\"]\n             ~~~~~~~^^^^^^^^^^\n", 1)
		want := Fingerprint(ClassPermanent, "KeyError: 'amount'", charge)
		assert.Equal(t, want, Fingerprint(ClassPermanent, "KeyError: 'total'", moved), "line numbers and quoted values do not split a group")
		assert.Equal(t, want, Fingerprint(ClassPermanent, "KeyError: 'amount'", noSource), "a missing source line does not split a group")
		assert.Equal(t, want, Fingerprint(ClassPermanent, "KeyError: 'amount'", carets), "a caret line does not split a group")
		assert.Equal(t, want, Fingerprint(ClassPermanent, "KeyError: 'amount'", "\n  "+strings.ReplaceAll(charge, "\n", "\r\n")), "blank lines first and CRLF line ends do not split it")
	})

	t.Run("ChainedTakesTheLastTraceback", func(t *testing.T) {
		t.Parallel()
		// The exception raised last, the one the worker died of, is in
		// the last traceback; an earlier one is what it handled, or what
		// it was raised from, and fills the frames the last one has not
		// (TestRev39WrappedErrorsGroupByWhereTheirCauseFailed).
		during := "\nDuring handling of the above exception, another exception occurred:\n\n"
		cause := "\nThe above exception was the direct cause of the following exception:\n\n"
		fp := func(stack string) string { return Fingerprint(ClassPermanent, "KeyError: 'amount'", stack) }
		deep := strings.Replace(charge, "in main\n", "in main\n    run(msg)\n  File \"/app/worker.py\", line 70, in run\n", 1)
		require.Len(t, topFrames(deep, StackFramesInFingerprint), StackFramesInFingerprint)
		assert.Equal(t, fp(deep), fp(reserve+during+deep), "what was being handled does not split a group whose last traceback has the frames")
		assert.Equal(t, fp(deep), fp(reserve+cause+deep))
		assert.NotEqual(t, fp(reserve+during+charge), fp(charge+during+reserve), "the last traceback decides")
		// A last traceback of one frame takes that frame first, then the
		// innermost of the traceback before it.
		short := "Traceback (most recent call last):\n  File \"/app/billing/charge.py\", line 12, in charge_card\nKeyError: 'amount'\n"
		assert.Equal(t, []string{"/app/billing/charge.py:<#> in charge_card", "/app/inventory/reserve.py:<#> in reserve_stock", "/app/worker.py:<#> in main", "/app/worker.py:<#> in <module>"},
			topFrames(reserve+during+short, StackFramesInFingerprint))
	})

	t.Run("InnermostFramesOfADeepTraceback", func(t *testing.T) {
		t.Parallel()
		// Frames outside the innermost StackFramesInFingerprint do not
		// take part, however many there are.
		outer := func(frames int) string {
			var b strings.Builder
			b.WriteString("Traceback (most recent call last):\n")
			for range frames {
				b.WriteString("  File \"/app/recurse.py\", line 5, in outer\n    outer()\n")
			}
			return b.String() + strings.TrimPrefix(charge, "Traceback (most recent call last):\n")
		}
		deep := outer(20000)
		assert.Equal(t, Fingerprint(ClassPermanent, "x", outer(1)), Fingerprint(ClassPermanent, "x", deep))
		assert.NotEqual(t, Fingerprint(ClassPermanent, "x", outer(0)), Fingerprint(ClassPermanent, "x", deep), "the fourth frame takes part")
		frames := topFrames(deep, StackFramesInFingerprint)
		require.Len(t, frames, StackFramesInFingerprint)
		assert.Equal(t, "/app/billing/charge.py:<#> in charge_card", frames[0], "innermost first, path and function kept")
	})
}

// pyWrapped is a traceback of a worker that wraps every error: process
// calls fn of file, which fails, and raises WorkerError from what it
// caught, so the last traceback is the wrapper's, the same whatever
// failed.
func pyWrapped(file, line, fn, exception, between string) string {
	return "Traceback (most recent call last):\n" +
		"  File \"/app/worker.py\", line 60, in process\n    " + fn + "(payload)\n" +
		"  File \"" + file + "\", line " + line + ", in " + fn + "\n" +
		exception + "\n\n" + between + "\n\n" +
		"Traceback (most recent call last):\n" +
		"  File \"/app/worker.py\", line 88, in <module>\n    main()\n" +
		"  File \"/app/worker.py\", line 80, in main\n    process(msg)\n" +
		"  File \"/app/worker.py\", line 62, in process\n    raise WorkerError(\"message failed\") from e\n" +
		"WorkerError: message failed\n"
}

// TestRev39WrappedErrorsGroupByWhereTheirCauseFailed (review 39,
// follow-up): with raise X from e the last traceback holds the wrapper's
// frames alone (process, main, <module>), so every failure of a worker
// that wraps its errors was one group again. The innermost frames of the
// traceback it was raised from, or raised while handling, fill the
// frames the last one has not.
func TestRev39WrappedErrorsGroupByWhereTheirCauseFailed(t *testing.T) {
	t.Parallel()
	const cause = "The above exception was the direct cause of the following exception:"
	const during = "During handling of the above exception, another exception occurred:"
	fp := func(stack string) string { return Fingerprint(ClassPermanent, "WorkerError: message failed", stack) }

	t.Run("OtherCauseOtherGroup", func(t *testing.T) {
		t.Parallel()
		for _, between := range []string{cause, during} {
			charge := pyWrapped("/app/billing/charge.py", "12", "charge_card", "KeyError: 'amount'", between)
			reserve := pyWrapped("/app/inventory/reserve.py", "40", "reserve_stock", "ValueError: bad sku", between)
			assert.NotEqual(t, fp(charge), fp(reserve), between)
			assert.Equal(t, []string{"/app/worker.py:<#> in process", "/app/worker.py:<#> in main", "/app/worker.py:<#> in <module>", "/app/billing/charge.py:<#> in charge_card"},
				topFrames(charge, StackFramesInFingerprint), "the last traceback's frames first, then the cause's innermost")
		}
	})

	t.Run("SameCauseOneGroup", func(t *testing.T) {
		t.Parallel()
		charge := pyWrapped("/app/billing/charge.py", "12", "charge_card", "KeyError: 'amount'", cause)
		assert.Equal(t, fp(charge), fp(pyWrapped("/app/billing/charge.py", "19", "charge_card", "KeyError: 'total'", cause)))
		// Only the traceback just before the last one fills: one before
		// that is not read.
		tb := func(file, fn string) string {
			return "Traceback (most recent call last):\n  File \"" + file + "\", line 1, in " + fn + "\nError: x\n\n" + cause + "\n\n"
		}
		two := tb("/app/billing/charge.py", "charge_card") + strings.TrimSuffix(tb("/app/worker.py", "process"), "\n\n"+cause+"\n\n")
		require.Len(t, topFrames(two, StackFramesInFingerprint), 2)
		assert.Equal(t, fp(two), fp(tb("/app/old.py", "old")+two))
	})

	t.Run("OnlyAChainedTracebackFills", func(t *testing.T) {
		t.Parallel()
		// Two tracebacks logged one after the other, not chained: the
		// one before is another failure, and takes no part.
		charge := pyWrapped("/app/billing/charge.py", "12", "charge_card", "KeyError: 'amount'", "worker restarted")
		reserve := pyWrapped("/app/inventory/reserve.py", "40", "reserve_stock", "ValueError: bad sku", "worker restarted")
		assert.Equal(t, fp(charge), fp(reserve))
		assert.Len(t, topFrames(charge, StackFramesInFingerprint), 3)
	})
}

// TestRev39GoAndJavaStacksKeepTheirFingerprints (review 39): reading
// Python tracebacks changed nothing for other stacks. The values are those
// Fingerprint gave before it read them; a change would split every stored
// Go or Java group from its new arrivals.
func TestRev39GoAndJavaStacksKeepTheirFingerprints(t *testing.T) {
	t.Parallel()
	goStack := "goroutine 7 [running]:\nmain.charge(0xc000123)\n\t/app/charge.go:42 +0x1d\nmain.fromHTTP(0x123)\n\t/app/fromHTTP.go:1123 +0x2f\nmain.main()\n\t/app/main.go:123 +0x3d\n"
	javaStack := "java.lang.IllegalStateException: order 7 closed\n\tat com.acme.Orders.charge(Orders.java:42)\n\tat com.acme.Handler.handle(Handler.java:17)\n\tat com.acme.Worker.run(Worker.java:88)\n\tat java.base/java.lang.Thread.run(Thread.java:833)\n"
	assert.Equal(t, "d9167ef1a4b7677c6d24031d", Fingerprint(ClassTransient, "card declined", goStack))
	assert.Equal(t, "8d9507842c396f68bacf365e", Fingerprint(ClassPermanent, "order 7 closed", javaStack))
}

// FuzzRev39TopFrames: whatever the stack, at most StackFramesInFingerprint
// lines take part, and a Python traceback chained after another keeps its
// own frames first, and no others when it has StackFramesInFingerprint.
func FuzzRev39TopFrames(f *testing.F) {
	f.Add(pyTraceback("/app/billing/charge.py", "12", "charge_card", `amount = payload["amount"]`, "KeyError: 'amount'"), "x")
	f.Add("Traceback (most recent call last):\n  File \"", "\n")
	f.Add("Traceback (most recent call last):\n  File \"a\", line ", "File \"b\", line 1, in c")
	f.Add("goroutine 1 [running]:\nmain.main()\n\t/app/main.go:1 +0x1\n", "")
	f.Fuzz(func(t *testing.T, stack, before string) {
		frames := topFrames(stack, StackFramesInFingerprint)
		if len(frames) > StackFramesInFingerprint {
			t.Fatalf("%d frames", len(frames))
		}
		if strings.TrimSpace(firstLine(stack)) == pythonTracebackHeader {
			chained := pythonTracebackHeader + "\n" + before + "\nDuring handling of the above exception, another exception occurred:\n\n" + stack
			got := topFrames(chained, StackFramesInFingerprint)
			if len(got) < len(frames) || strings.Join(got[:len(frames)], "\n") != strings.Join(frames, "\n") ||
				len(frames) == StackFramesInFingerprint && len(got) != len(frames) {
				t.Fatalf("chained before it: %q, alone: %q", got, frames)
			}
		}
	})
}

// TestRev39PythonPackagesGroupWhereverInstalled (review 39, follow-up): a
// frame's path held where Python and its packages were installed, so the
// same error in the same package was a group per image or virtualenv.
// A package's path is taken from what follows site-packages/ or
// dist-packages/, the standard library's from what follows
// /lib/pythonX.Y/; the application's paths are kept.
func TestRev39PythonPackagesGroupWhereverInstalled(t *testing.T) {
	t.Parallel()
	fp := func(file string) string {
		return Fingerprint(ClassTransient, "ConnectionError: refused", pyTraceback(file, "501", "send", "raise ConnectionError(e)", "ConnectionError: refused"))
	}
	frame := func(file string) string {
		return topFrames(pyTraceback(file, "501", "send", "x", "E: x"), StackFramesInFingerprint)[0]
	}

	t.Run("PackagesWhereverInstalledOneGroup", func(t *testing.T) {
		t.Parallel()
		want := fp("/usr/local/lib/python3.11/site-packages/requests/adapters.py")
		for _, file := range []string{
			"/opt/venv/lib/python3.12/site-packages/requests/adapters.py",
			"/usr/lib/python3/dist-packages/requests/adapters.py",
			"/home/app/.local/lib/python3.13t/site-packages/requests/adapters.py",
			"/opt/venv/lib/python3.12/site-packages/vendor/lib/python3.9/site-packages/requests/adapters.py",
		} {
			assert.Equal(t, want, fp(file), file)
		}
		assert.Equal(t, "requests/adapters.py:<#> in send", frame("/opt/venv/lib/python3.12/site-packages/requests/adapters.py"))
		assert.NotEqual(t, want, fp("/usr/local/lib/python3.11/site-packages/urllib3/adapters.py"), "another package")
	})

	t.Run("StandardLibraryWhereverInstalledOneGroup", func(t *testing.T) {
		t.Parallel()
		want := fp("/usr/lib/python3.11/json/decoder.py")
		assert.Equal(t, want, fp("/usr/local/lib/python3.12/json/decoder.py"))
		assert.Equal(t, want, fp("/root/.pyenv/versions/3.11.4/lib/python3.11/json/decoder.py"))
		assert.Equal(t, "json/decoder.py:<#> in send", frame("/usr/local/lib/python3.12/json/decoder.py"))
		assert.NotEqual(t, want, fp("/usr/lib/python3.11/json/encoder.py"), "another module")
	})

	t.Run("ApplicationPathsKept", func(t *testing.T) {
		t.Parallel()
		assert.Equal(t, "/app/billing/charge.py:<#> in send", frame("/app/billing/charge.py"))
		assert.NotEqual(t, fp("/app/billing/charge.py"), fp("/srv/billing/charge.py"))
		for _, file := range []string{"/app/lib/python/x.py", "/app/lib/python3/x.py", "/app/lib/python3./x.py", "/app/lib/python.3/x.py", "/app/lib/python3.1.2/x.py"} {
			assert.Equal(t, NormaliseMessage(file+":501 in send"), frame(file), "no pythonX.Y, no cut")
		}
	})
}

// firstLine is the first line of s that is not blank, trimmed.
func firstLine(s string) string {
	for s != "" {
		line, rest, _ := strings.Cut(s, "\n")
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
		s = rest
	}
	return ""
}
