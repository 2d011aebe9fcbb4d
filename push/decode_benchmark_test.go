package push

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vram-exporter/vram_exporter/clock"
)

func BenchmarkDecode(b *testing.B) {
	for _, bc := range []struct {
		name string
		msg  string
	}{{"1gpu", typicalMessage}, {"8gpu", multiGPUMessage(8)}} {
		b.Run(bc.name, func(b *testing.B) {
			msg := []byte(bc.msg)
			b.SetBytes(int64(len(msg)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Decode(msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkIngest is the per-message work of the server after the read: decode, validate
// and store. Messages per second per core = 1e9 / ns/op.
func BenchmarkIngest(b *testing.B) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	store := NewStore(30*time.Second, 1024, clk)
	msg := []byte(typicalMessage)
	cred := Cred{PID: 4242, UID: 1000, GID: 1000}
	at := clk.Now()
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		m, err := Decode(msg)
		if err != nil {
			b.Fatal(err)
		}
		if err := store.Update(1, at, cred, m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStoreSnapshot(b *testing.B) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	store := NewStore(30*time.Second, 2000, clk)
	m, err := Decode([]byte(typicalMessage))
	if err != nil {
		b.Fatal(err)
	}
	for i := range 1000 {
		if err := store.Update(uint64(i+1), clk.Now(), Cred{PID: uint32(10000 + i)}, m); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if n := len(store.Snapshot()); n != 1000 {
			b.Fatalf("snapshot has %d senders", n)
		}
	}
}

// hostileMessages are valid messages of the largest size a sender may send, shaped to
// cost the decoder most: the price of one garbage message under a flood.
func hostileMessages() []struct{ name, msg string } {
	const size = 60 << 10
	head, tail := `{"v":1,"runtime":"torch","devices":[],"x":`, `}`
	var names, nest, str strings.Builder
	names.WriteString("{")
	for i := 0; names.Len() < size-len(head)-20; i++ {
		if i > 0 {
			names.WriteString(",")
		}
		fmt.Fprintf(&names, `"n%d":0`, i)
	}
	names.WriteString("}")
	// Just inside the nesting depth encoding/json and jsontext accept.
	nest.WriteString(strings.Repeat("[", 9000) + strings.Repeat("]", 9000))
	str.WriteString(`"` + strings.Repeat("é\\n", (size-len(head)-20)/4) + `"`)
	return []struct{ name, msg string }{
		{"wide-object", head + names.String() + tail},
		{"deep-arrays", head + nest.String() + tail},
		{"long-escaped-string", head + str.String() + tail},
	}
}

func BenchmarkDecodeHostile(b *testing.B) {
	for _, bc := range hostileMessages() {
		b.Run(bc.name, func(b *testing.B) {
			msg := []byte(bc.msg)
			b.SetBytes(int64(len(msg)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Decode(msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
