package dlq

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRev43EscapedAndQuotedBodiesGroupByWhatTheySay (review 43): a
// response body arrives quoted or escaped as often as bare: printed with
// Go's %q, as Python's bytes, in quotes, or nested by a gateway in the
// message of its own body. Its escaped quotes (\") were read as quotes,
// and a quoted body was one value, <q>: bodies of one endpoint that say
// different things were one group, sharing triage, snoozes and group
// actions. They are read as a bare body is
// (TestRev42ErrorBodiesGroupByWhatTheySay); ids, numbers, users and
// values quoted elsewhere still split nothing.
func TestRev43EscapedAndQuotedBodiesGroupByWhatTheySay(t *testing.T) {
	t.Parallel()
	group := func(msg string) string { return Fingerprint(ClassPermanent, msg, "") }
	goQuoted := func(body string) string { return "charge: unexpected response 402: " + strconv.Quote(body) }

	t.Run("SayOtherThingsOtherGroups", func(t *testing.T) {
		t.Parallel()
		for _, p := range [][2]string{
			{`charge: unexpected response 402: "{\"error\":\"payment declined\"}"`, `charge: unexpected response 402: "{\"error\":\"tenant suspended\"}"`},
			{`charge: HTTP 402: b'{"error":"payment declined"}'`, `charge: HTTP 402: b'{"error":"tenant suspended"}'`},
			{`{"error":"upstream: {\"error\":\"payment declined\"}"}`, `{"error":"upstream: {\"error\":\"tenant suspended\"}"}`},
			{`charge: 402 '{"error":"payment declined"}'`, `charge: 402 '{"error":"tenant suspended"}'`},
			{`charge: 402 "[{\"message\":\"card declined\"}]"`, `charge: 402 "[{\"message\":\"tenant suspended\"}]"`},
			// An escaped body with no quotes around it (a logger's
			// escaped line), and Python's repr of a dict in a str.
			{`upstream said {\"error\":\"payment declined\"}`, `upstream said {\"error\":\"tenant suspended\"}`},
			{`HTTPError: "{'code': 'card_declined'}"`, `HTTPError: "{'code': 'expired_card'}"`},
			// A gateway's body in a gateway's body, each quoted with %q.
			{goQuoted(`{"error":` + strconv.Quote(`{"code":"card_declined"}`) + `}`), goQuoted(`{"error":` + strconv.Quote(`{"code":"expired_card"}`) + `}`)},
		} {
			assert.NotEqual(t, group(p[0]), group(p[1]), "%s\n%s\nare one group: %q", p[0], p[1], NormaliseMessage(p[0]))
		}
		assert.Equal(t, `charge: unexpected response <#>: "{"error":"payment declined"}"`,
			NormaliseMessage(`charge: unexpected response 402: "{\"error\":\"payment declined\"}"`))
	})

	t.Run("SaySameThingOneGroup", func(t *testing.T) {
		t.Parallel()
		for _, p := range [][2]string{
			{goQuoted(`{"error":"order 7781 not found","request_id":"req_8f2a91"}`), goQuoted(`{"error":"order 12 not found","request_id":"req_0b77c3"}`)},
			{goQuoted(`{"error":"forbidden","user":"alice"}`), goQuoted(`{"error":"forbidden","user":"bob"}`)},
			{`charge: HTTP 402: b'{"error":"limit exceeded","amount":1250}'`, `charge: HTTP 402: b'{"error":"limit exceeded","amount":99}'`},
			{`{"error":"upstream: {\"error\":\"no such customer\",\"email\":\"alice@example.com\"}"}`, `{"error":"upstream: {\"error\":\"no such customer\",\"email\":\"bob@example.org\"}"}`},
			// A value quoted in a message key's escaped text is a value.
			{`{"error":"user \"alice\" not found"}`, `{"error":"user \"bob\" not found"}`},
			{`user \"alice\" not found`, `user \"bob\" not found`},
			{goQuoted(`user "alice" not found`), goQuoted(`user "bob" not found`)},
			// Quoted text that is no body, paths with backslashes.
			{`parse '{alice}': bad template`, `parse '{bob}': bad template`},
			{`parse "[x]": bad range`, `parse "[y]": bad range`},
			{`open "C:\\data\\alice.csv": access denied`, `open "C:\\data\\bob.csv": access denied`},
			{`can\'t find 'order-1'`, `can\'t find 'order-77'`},
		} {
			assert.Equal(t, group(p[0]), group(p[1]), "%s\n%s\nare two groups: %q / %q", p[0], p[1], NormaliseMessage(p[0]), NormaliseMessage(p[1]))
		}
	})

	t.Run("NestingIsBounded", func(t *testing.T) {
		t.Parallel()
		// Quoted maxQuoteNesting times over, a body is read; deeper, it
		// is a value, and each level reads its text once more.
		nest := func(body string, times int) string {
			for range times {
				body = `{"error":` + strconv.Quote(body) + `}`
			}
			return body
		}
		a, b := `{"error":"payment declined"}`, `{"error":"tenant suspended"}`
		assert.NotEqual(t, group(nest(a, maxQuoteNesting-1)), group(nest(b, maxQuoteNesting-1)))
		assert.Equal(t, group(nest(a, maxQuoteNesting)), group(nest(b, maxQuoteNesting)))
		// Shapes that would make a quote's search quadratic: each of
		// these, a megabyte, is read in a few passes.
		for _, s := range []string{
			strings.Repeat(`\"x`, 1<<18), strings.Repeat(`"x`, 1<<18), strings.Repeat(`\\\"x\"`, 1<<17),
			strings.Repeat(`\`, 1<<20) + `"`, `"` + strings.Repeat(`\"`, 1<<19), nest(a, 14),
		} {
			assert.NotEmpty(t, NormaliseMessage(s))
		}
	})
}

// springWrapped is a trace of Spring's listener container, which wraps
// whatever the listener threw: its own frames, the same whatever failed,
// then what caused it.
func springWrapped(causes string) string {
	return "org.springframework.kafka.listener.ListenerExecutionFailedException: Listener method 'public void com.acme.OrderListener.onMessage(java.lang.String)' threw exception\n" +
		"\tat org.springframework.kafka.listener.KafkaMessageListenerContainer$ListenerConsumer.decorateException(KafkaMessageListenerContainer.java:2945)\n" +
		"\tat org.springframework.kafka.listener.KafkaMessageListenerContainer$ListenerConsumer.doInvokeOnMessage(KafkaMessageListenerContainer.java:2885)\n" +
		"\tat org.springframework.kafka.listener.KafkaMessageListenerContainer$ListenerConsumer.invokeOnMessage(KafkaMessageListenerContainer.java:2850)\n" +
		"\tat org.springframework.kafka.listener.KafkaMessageListenerContainer$ListenerConsumer.doInvokeRecordListener(KafkaMessageListenerContainer.java:2745)\n" +
		causes
}

// pyGroup is a traceback of an asyncio.TaskGroup (Python 3.11) whose
// tasks failed, as the interpreter prints it: the group's traceback, then
// each sub-exception's, in a margin.
func pyGroup(subs ...string) string {
	var b strings.Builder
	b.WriteString("  + Exception Group Traceback (most recent call last):\n" +
		"  |   File \"/app/worker.py\", line 11, in <module>\n  |     asyncio.run(main())\n" +
		"  |   File \"/usr/local/lib/python3.11/asyncio/runners.py\", line 190, in run\n  |     return runner.run(main)\n  |            ^^^^^^^^^^^^^^^^\n" +
		"  |   File \"/app/worker.py\", line 31, in main\n  |     async with asyncio.TaskGroup() as tg:\n" +
		"  |   File \"/usr/local/lib/python3.11/asyncio/taskgroups.py\", line 145, in __aexit__\n  |     raise me from None\n" +
		"  | ExceptionGroup: unhandled errors in a TaskGroup (" + strconv.Itoa(len(subs)) + " sub-exceptions)\n")
	for i, sub := range subs {
		if i == 0 {
			b.WriteString("  +-+---------------- 1 ----------------\n")
		} else {
			b.WriteString("    +---------------- " + strconv.Itoa(i+1) + " ----------------\n")
		}
		for line := range strings.SplitSeq(strings.TrimSuffix(sub, "\n"), "\n") {
			b.WriteString("    | " + line + "\n")
		}
	}
	b.WriteString("    +------------------------------------\n")
	return b.String()
}

// pyTask is a sub-exception's traceback: a task's coroutine fn of file
// failed at line.
func pyTask(file, line, fn, exception string) string {
	return "Traceback (most recent call last):\n  File \"" + file + "\", line " + line + ", in " + fn + "\n    raise " + exception + "\n" + exception + "\n"
}

// TestRev43WrappedExceptionsGroupByTheirCause (review 43): an exception
// that wraps another was grouped by the wrapper. A Java trace's first
// lines are a framework's wrapper and its frames, the same whatever the
// listener threw: an NPE in pricing and a deadlock in inventory were one
// group. A Python exception group (TaskGroup) was not read as a
// traceback: its first lines, every path <q>, were the same for every
// task's failure; so were a traceback under a logger's line and one cut
// above its header. The innermost cause, and a group's last
// sub-exception, decide; ids, line numbers and what a logger printed
// above split nothing.
func TestRev43WrappedExceptionsGroupByTheirCause(t *testing.T) {
	t.Parallel()
	const listener = "Listener method 'public void com.acme.OrderListener.onMessage(java.lang.String)' threw exception"
	npe := func(line string) string {
		return springWrapped("Caused by: java.lang.NullPointerException: Cannot invoke \"String.length()\" because \"s\" is null\n" +
			"\tat com.acme.OrderService.price(OrderService.java:" + line + ")\n")
	}
	deadlock := func(order string) string {
		return springWrapped("Caused by: org.postgresql.util.PSQLException: ERROR: deadlock detected on order " + order + "\n" +
			"\tat com.acme.InventoryRepo.reserve(InventoryRepo.java:88)\n")
	}

	t.Run("JavaCauseOtherCauseOtherGroup", func(t *testing.T) {
		t.Parallel()
		fp := func(stack string) string { return Fingerprint(ClassUnclassified, listener, stack) }
		assert.NotEqual(t, fp(npe("42")), fp(deadlock("7781")))
		assert.Equal(t, []string{
			`caused by: java.lang.nullpointerexception: cannot invoke <q> because <q> is null`,
			`at com.acme.orderservice.price(orderservice.java:<#>)`,
			`at org.springframework.kafka.listener.kafkamessagelistenercontainer$listenerconsumer.decorateexception(kafkamessagelistenercontainer.java:<#>)`,
			`at org.springframework.kafka.listener.kafkamessagelistenercontainer$listenerconsumer.doinvokeonmessage(kafkamessagelistenercontainer.java:<#>)`,
		}, topFrames(npe("42"), StackFramesInFingerprint), "the cause's line and frames, then the wrapper's innermost")
		// Two causes deep: the innermost decides, the one between fills.
		mid := func(inner string) string {
			return springWrapped("Caused by: java.lang.IllegalStateException: pricing failed\n\tat com.acme.OrderListener.onMessage(OrderListener.java:31)\n\t... 4 more\n" +
				inner + "\t... 5 more\n")
		}
		npeCause := "Caused by: java.lang.NullPointerException: x\n\tat com.acme.OrderService.price(OrderService.java:42)\n"
		dlCause := "Caused by: org.postgresql.util.PSQLException: ERROR: deadlock detected\n\tat com.acme.InventoryRepo.reserve(InventoryRepo.java:88)\n"
		assert.NotEqual(t, fp(mid(npeCause)), fp(mid(dlCause)))
		assert.Equal(t, "at com.acme.orderlistener.onmessage(orderlistener.java:<#>)", topFrames(mid(npeCause), StackFramesInFingerprint)[2], "... N more is no frame")
	})

	t.Run("JavaCauseSameCauseOneGroup", func(t *testing.T) {
		t.Parallel()
		fp := func(stack string) string { return Fingerprint(ClassUnclassified, listener, stack) }
		assert.Equal(t, fp(deadlock("7781")), fp(deadlock("12")), "ids in the cause's message")
		assert.Equal(t, fp(npe("42")), fp(npe("57")), "line numbers")
		assert.Equal(t, fp(npe("42")), fp(strings.ReplaceAll(npe("42"), "\n", "\r\n")), "CRLF line ends")
		assert.Equal(t, fp(npe("42")), fp(npe("42")+"\t... 23 more\n"), "how many frames Java left out")
		// A suppressed exception's cause, indented, is not the trace's.
		suppressed := "\tSuppressed: java.io.IOException: close failed\n\t\tat com.acme.Conn.close(Conn.java:9)\n" +
			"\tCaused by: java.net.SocketException: reset\n\t\tat com.acme.Conn.flush(Conn.java:" + "20)\n"
		assert.Equal(t, fp(npe("42")), fp(npe("42")+suppressed))
		// A trace without causes is read as before: its first lines.
		plain := "java.lang.IllegalStateException: order 7 closed\n\tat com.acme.Orders.charge(Orders.java:42)\n\tat com.acme.Handler.handle(Handler.java:17)\n\tat com.acme.Worker.run(Worker.java:88)\n\tat java.base/java.lang.Thread.run(Thread.java:833)\n"
		assert.Equal(t, "8d9507842c396f68bacf365e", Fingerprint(ClassPermanent, "order 7 closed", plain))
	})

	charge := pyGroup(pyTask("/app/billing/charge.py", "12", "charge_card", "CardDeclined('declined')"))
	reserve := pyGroup(pyTask("/app/inventory/reserve.py", "40", "reserve", "KeyError('sku')"))
	const group = "unhandled errors in a TaskGroup (1 sub-exception)"
	fp := func(stack string) string { return Fingerprint(ClassUnclassified, group, stack) }

	t.Run("PythonGroupOtherTaskOtherGroup", func(t *testing.T) {
		t.Parallel()
		assert.NotEqual(t, fp(charge), fp(reserve))
		assert.Equal(t, []string{"/app/billing/charge.py:<#> in charge_card", "asyncio/taskgroups.py:<#> in __aexit__", "/app/worker.py:<#> in main", "asyncio/runners.py:<#> in run"},
			topFrames(charge, StackFramesInFingerprint), "the sub-exception's frames, then the group's innermost")
		// The last sub-exception decides; the others take no part.
		other := pyTask("/app/mail/send.py", "3", "send", "TimeoutError()")
		assert.NotEqual(t, fp(pyGroup(other, pyTask("/app/billing/charge.py", "12", "charge_card", "E()"))), fp(pyGroup(other, pyTask("/app/inventory/reserve.py", "40", "reserve", "E()"))))
		assert.Equal(t, topFrames(charge, StackFramesInFingerprint), topFrames(pyGroup(other, pyTask("/app/billing/charge.py", "12", "charge_card", "E()")), StackFramesInFingerprint))
	})

	t.Run("PythonGroupSameTaskOneGroup", func(t *testing.T) {
		t.Parallel()
		assert.Equal(t, fp(charge), fp(pyGroup(pyTask("/app/billing/charge.py", "19", "charge_card", "CardDeclined('order 7781')"))))
		assert.Equal(t, fp(charge), fp("2026-05-01T12:00:00Z ERROR worker: message 7781 failed\n"+charge), "a logger's line above")
		// A sub-exception raised from another: its own chain decides,
		// as a traceback's does.
		chained := func(file string) string {
			return pyGroup(pyTask(file, "2", "inner", "ValueError('bad sku')") +
				"\nThe above exception was the direct cause of the following exception:\n\n" +
				pyTask("/app/worker.py", "7", "wrap", "RuntimeError('reserve failed')"))
		}
		assert.NotEqual(t, fp(chained("/app/inventory/reserve.py")), fp(chained("/app/billing/charge.py")))
	})

	t.Run("PythonTracebackAfterALogLine", func(t *testing.T) {
		t.Parallel()
		plain := func(file, fn string) string {
			return pyTraceback(file, "12", fn, "x = payload[\"amount\"]", "KeyError: 'amount'")
		}
		for _, log := range []string{"2026-05-01 12:00:00,001 ERROR consumer: failed\n", "ERROR failed message 7781\nattempt 3 of 3\n"} {
			assert.Equal(t, fp(plain("/app/billing/charge.py", "handle")), fp(log+plain("/app/billing/charge.py", "handle")), log)
			assert.NotEqual(t, fp(log+plain("/app/billing/charge.py", "handle")), fp(log+plain("/app/inventory/reserve.py", "handle")), log)
		}
		// Cut above its header, its "File" lines are frames still:
		// the path tells one failure from another.
		cut := func(file string) string {
			_, frames, _ := strings.Cut(plain(file, "handle"), "\n")
			return frames
		}
		assert.NotEqual(t, fp(cut("/app/billing/charge.py")), fp(cut("/app/inventory/reserve.py")))
		assert.Equal(t, fp(cut("/app/billing/charge.py")), fp(strings.ReplaceAll(cut("/app/billing/charge.py"), "line 88", "line 91")))
	})
}
