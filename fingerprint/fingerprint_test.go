package fingerprint_test

import (
	"fmt"
	"runtime/debug"
	"strings"
	"testing"

	crdb "github.com/cockroachdb/errors"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/fingerprint"
)

const module = "github.com/amends-dev/amends"

var fn = aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: "orders", ProcessorName: "billing", Name: "charge"}

func TestNormalize(t *testing.T) {
	cases := []struct{ in, want string }{
		{"order 42 not found", "order <n> not found"},
		{"record 6f1c2b9e-1d2a-4c3b-9a8f-0e1d2c3b4a59 missing", "record <uuid> missing"},
		{`user "alice" has no key 'k1'`, "user <q> has no key <q>"},
		{"at 2026-12-01T11:22:52.123Z and 2026-12-01 11:22 or 11:22:52", "at <time> and <time> or <time>"},
		{"addr 0x7ffee3b0 hash deadbeef99 word deadbeef", "addr <n> hash <n> word deadbeef"},
		{"msg id 9aZ3kLmN0pQrStUvWx1 failed", "msg id <id> failed"},
		{"timeout   after\n2.5s", "timeout after <n>s"},
		{"connection refused", "connection refused"},
		// Addresses (issue 30, item 16).
		{"smtp 451 for inv-1@example.com: try later", "smtp <n> for <email>: try later"},
		{"smtp 451 for <ord-2.Smith+x@mail.example.org>", "smtp <n> for <<email>>"},
		{"dial tcp: lookup db-3.orders.svc.cluster.local: no such host", "dial tcp: lookup <host>: no such host"},
		{"connect to mx1.example.com:25 refused", "connect to <host> refused"},
		{"user “alice” and ‘bob’ locked", "user <q> and <q> locked"},
		// What is not an address stays as it was.
		{"open main.go: io.EOF at order.lines", "open main.go: io.EOF at order.lines"},
		{"parse config.yaml failed", "parse config.yaml failed"},
		{"github.com/x/y.Func failed", "<host>/x/y.Func failed"},
		{"read tcp 10.0.0.7:41822->10.0.0.9:25", "read tcp <n>.<n>:<n>-><n>.<n>:<n>"},
		{"a@b is no address, nor x.y@z", "a@b is no address, nor x.y@z"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, fingerprint.Normalize(c.in), "Normalize(%q)", c.in)
	}
}

// One problem, whatever address a failure names, is one fingerprint, so a
// rule made from one failure matches the next (issue 30, item 16).
func TestAddressesDoNotSplitAFingerprint(t *testing.T) {
	a := fingerprint.Of(fn, "SMTP451", "send to inv-1@example.com via mx1.example.com:25: 451 greylisted", "", module)
	b := fingerprint.Of(fn, "SMTP451", "send to ord-2@shop.example.net via mx7.example.com:587: 451 greylisted", "", module)
	assert.Equal(t, a, b)
	assert.NotEqual(t, a, fingerprint.Of(fn, "SMTP451", "send to ord-2@shop.example.net: 550 mailbox full", "", module), "another problem")
}

// Messages without an address keep the fingerprint they had before
// addresses were replaced (these were computed with the earlier code), so
// the rules made from them still match.
func TestFingerprintsWithoutAddressesAreUnchanged(t *testing.T) {
	for _, c := range []struct{ msg, fp string }{
		{"order 42 not found (id 6f1c2b9e-1d2a-4c3b-9a8f-0e1d2c3b4a59)", "fp1-0dacfb59bc4b6df2"},
		{"user \"alice\" has no key 'k1' at 2026-12-01T11:22:52Z", "fp1-e7424a02b6aa2274"},
		{"open main.go: io.EOF at order.lines[3]", "fp1-6ca4f531a53e1808"},
		{"read tcp 10.0.0.7:41822->10.0.0.9:25: connection reset by peer", "fp1-1c317bae8a4a52da"},
		{"charge-7 of x+y failed: a.b-c 0x7ffe", "fp1-e2dd32ccd8ccec57"},
	} {
		assert.Equal(t, c.fp, fingerprint.Of(fn, "C", c.msg, "", module), c.msg)
	}
}

func TestNormalizeIsBounded(t *testing.T) {
	long := strings.Repeat("é", fingerprint.MaxInput)
	got := fingerprint.Normalize(long + " 42")
	assert.LessOrEqual(t, len(got), fingerprint.MaxInput)
	assert.NotContains(t, got, "42", "the tail past MaxInput is not read")
	assert.True(t, strings.HasSuffix(got, "é"), "no UTF-8 sequence is split")
}

// The same failure with different ids, numbers, quoted values and times
// normalises to one message and one fingerprint.
func TestPropertySameFailureOneFingerprint(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		render := func(label string) string {
			id := uuid.NewString()
			if rapid.Bool().Draw(t, label+"upper") {
				id = strings.ToUpper(id)
			}
			n := rapid.Uint64().Draw(t, label+"n")
			name := rapid.StringMatching(`[a-zA-Z0-9 ]{0,20}`).Draw(t, label+"name")
			ts := rapid.Int64Range(0, 4e12).Draw(t, label+"ts")
			hexID := rapid.Uint64Range(1<<40, 1<<62).Draw(t, label+"hex")
			return fmt.Sprintf("charge %d of order %s for %q failed at %s (txn %x)",
				n, id, name, aggregateTime(ts), hexID)
		}
		a, b := render("a"), render("b")
		if fingerprint.Normalize(a) != fingerprint.Normalize(b) {
			t.Fatalf("%q and %q normalise to %q and %q", a, b, fingerprint.Normalize(a), fingerprint.Normalize(b))
		}
		if fingerprint.Of(fn, "Timeout", a, "", module) != fingerprint.Of(fn, "Timeout", b, "", module) {
			t.Fatal("one failure, two fingerprints")
		}
	})
}

func aggregateTime(ms int64) string {
	return fmt.Sprintf("%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", 2000+ms%100, 1+ms%12, 1+ms%28, ms%24, ms%60, ms%60, ms%1000)
}

// Different functions, codes and messages give different fingerprints.
func TestPropertyDifferentPartsDifferentFingerprints(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		word := rapid.StringMatching(`[a-z]{1,12}`)
		a, b := word.Draw(t, "a"), word.Draw(t, "b")
		if a == b {
			return
		}
		g := fn
		g.Name = b
		f := fn
		f.Name = a
		if fingerprint.Of(f, "X", "m", "", module) == fingerprint.Of(g, "X", "m", "", module) {
			t.Fatal("functions collide")
		}
		if fingerprint.Of(fn, a, "m", "", module) == fingerprint.Of(fn, b, "m", "", module) {
			t.Fatal("codes collide")
		}
		if fingerprint.Of(fn, "X", a, "", module) == fingerprint.Of(fn, "X", b, "", module) {
			t.Fatal("messages collide")
		}
	})
}

func siteA() error { return crdb.New("stock of sku 12 exhausted") }
func siteB() error { return crdb.New("stock of sku 12 exhausted") }

func TestDifferentCallSitesDifferentFingerprints(t *testing.T) {
	a, b, a2 := siteA(), siteB(), siteA()
	stack := func(err error) string { return fmt.Sprintf("%+v", err) }
	assert.Equal(t, module+"/fingerprint_test.siteA", fingerprint.Frame(stack(a), module))
	assert.Equal(t, module+"/fingerprint_test.siteB", fingerprint.Frame(stack(b), module))
	fa := fingerprint.Of(fn, "C", a.Error(), stack(a), module)
	assert.NotEqual(t, fa, fingerprint.Of(fn, "C", b.Error(), stack(b), module), "two call sites, two fingerprints")
	assert.Equal(t, fa, fingerprint.Of(fn, "C", a2.Error(), stack(a2), module), "one call site, one fingerprint")
	assert.True(t, fingerprint.Valid(fa), fa)
}

func TestFrameFormats(t *testing.T) {
	goroutine := "goroutine 7 [running]:\nruntime/debug.Stack()\n\t/go/src/runtime/debug/stack.go:26 +0x5e\n" +
		"example.com/shop/billing.(*Charger).Charge(0xc000010000, {0x1, 0x2})\n\t/src/billing/charge.go:40 +0x1d\nmain.main()\n\t/src/main.go:9 +0x25\n"
	assert.Equal(t, "example.com/shop/billing.(*Charger).Charge", fingerprint.Frame(goroutine, "example.com/shop"))
	assert.Equal(t, "example.com/shop/billing.(*Charger).Charge", fingerprint.Frame(goroutine, ""), "first frame outside the standard library")
	assert.Equal(t, "", fingerprint.Frame(goroutine, "example.com/other"))
	assert.Equal(t, "", fingerprint.Frame("", module))
	own := string(debug.Stack())
	assert.Equal(t, module+"/fingerprint_test.TestFrameFormats", fingerprint.Frame(own, module))
}

func TestValid(t *testing.T) {
	require.True(t, fingerprint.Valid("fp1-0123456789abcdef"))
	for _, s := range []string{"", "fp1-", "fp1-0123456789abcdeg", "fp2-0123456789abcdef", "fp1-0123456789abcdef0"} {
		assert.False(t, fingerprint.Valid(s), s)
	}
}

func ExampleNormalize() {
	fmt.Println(fingerprint.Normalize(`order 42 of "alice" not found (request 6f1c2b9e-1d2a-4c3b-9a8f-0e1d2c3b4a59)`))
	// Output: order <n> of <q> not found (request <uuid>)
}

func TestNormalizeEdges(t *testing.T) {
	cases := []struct{ in, want string }{
		{"don't retry 'k1' now", "don't retry <q> now"},
		{"unclosed \"quote 42", "unclosed \"quote <n>"},
		{"order-42 v2 x_9", "order-<n> v<n> x_<n>"},
		{"pi is 3.14, e is 2.71828.", "pi is <n>, e is <n>."},
		{"at 2026-12-01T11:22:52+01:00 ok", "at <time> ok"},
		{"12:30 is not a clock time with seconds", "<n>:<n> is not a clock time with seconds"},
		{"0xZZ and 0x1f", "<n>xZZ and <n>"},
		{"  lead and trail  ", "lead and trail"},
		{"ünïcode 7é", "ünïcode <n>é"},
		{"", ""},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, fingerprint.Normalize(c.in), "Normalize(%q)", c.in)
	}
}
