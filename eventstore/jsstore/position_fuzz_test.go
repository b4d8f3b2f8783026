package jsstore

import (
	"testing"

	"github.com/nats-io/nats.go"
)

// FuzzPosition feeds arbitrary position headers and sequences to the
// parser every read goes through. Whatever it accepts is consistent with
// where the message is stored, and parsing allocates nothing beyond the
// previous-sequence list (at most maxPrevSeqs entries).
func FuzzPosition(f *testing.F) {
	f.Add(uint64(5), "1000000000000", "1", "1")
	f.Add(uint64(5), "18446744073709551615", "1", "1")
	f.Add(uint64(40), "6", "20", "30,29,28,27,20")
	f.Add(uint64(40), "3", "20", "30,20")
	f.Add(uint64(1), "1", "", "")
	f.Add(uint64(0), "2", "1", "1")
	f.Add(uint64(100), "30", "1", "99,98,97,96,95,94,93,92,91,90,89,88,87,86,85,84")
	f.Fuzz(func(t *testing.T, seq uint64, version, first, prevs string) {
		h := nats.Header{}
		h.Set(HeaderVersion, version)
		h.Set(HeaderFirstSeq, first)
		h.Set(HeaderPrevSeqs, prevs)
		m := &rawMsg{subject: "amends.orders.order.fz", seq: seq, header: h}
		p, err := m.pos()
		if err != nil {
			return
		}
		if p.version == 0 || p.firstSeq > p.seq || p.version-1 > p.seq-p.firstSeq {
			t.Fatalf("accepted an impossible position %+v", p)
		}
		got, err := p.prevSeqs(m.subject)
		if err != nil {
			t.Fatalf("pos accepted %+v but its previous sequences do not parse: %v", p, err)
		}
		if want := min(p.version-1, maxPrevSeqs); uint64(len(got)) != want || cap(got) > maxPrevSeqs {
			t.Fatalf("%+v: %d previous sequences (capacity %d), want %d", p, len(got), cap(got), want)
		}
		last := p.seq
		for _, n := range got {
			if n >= last || n < p.firstSeq {
				t.Fatalf("%+v: previous sequence %d out of order", p, n)
			}
			last = n
		}
		if p.version > 1 && p.version-1 <= maxPrevSeqs && got[len(got)-1] != p.firstSeq {
			t.Fatalf("%+v: the oldest previous sequence is not the first", p)
		}
		next := position{version: p.version + 1, seq: p.seq + 1, firstSeq: p.firstSeq, prevs: p.nextPrevs()}
		if p.seq+1 > p.seq && p.version+1 > p.version {
			if _, err := next.prevSeqs(m.subject); err != nil {
				t.Fatalf("the next append after %+v would write an invalid list %q: %v", p, next.prevs, err)
			}
		}
	})
}
