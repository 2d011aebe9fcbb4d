package oom

import (
	"testing"

	"github.com/vram-exporter/vram_exporter/api"
	"github.com/vram-exporter/vram_exporter/push"
)

const gib = 1 << 30

func o(v uint64) push.Optional { return push.Optional{Value: v, Set: true} }

// event is an OOM on a device with 1 GiB free for the process and 2 GiB cached
// (4 GiB reserved, 2 GiB allocated): free + cached = 3 GiB.
func event(requested uint64) push.OOMEvent {
	return push.OOMEvent{Seq: 1, Requested: o(requested), DeviceFree: o(1 * gib), Allocated: o(2 * gib), Reserved: o(4 * gib)}
}

func TestClassifyBoundaries(t *testing.T) {
	known := func(b uint64) Floor { return Floor{Bytes: b, Known: true} }
	tests := []struct {
		name  string
		ev    push.OOMEvent
		floor Floor
		want  api.OOMKind
	}{
		{"request equals free+cached: fragmentation", event(3 * gib), Floor{}, api.OOMFragmentation},
		{"one byte more: shortage", event(3*gib + 1), Floor{}, api.OOMShortage},
		{"one byte more with a floor near demand: shortage", event(3*gib + 1), known(3 * gib), api.OOMShortage},
		// demand = 2 GiB + 3 GiB + 2 = 2 × (2.5 GiB + 1).
		{"demand exactly twice the floor: peak", event(3*gib + 2), known(2*gib + gib/2 + 1), api.OOMPeak},
		{"demand one byte under twice the floor: shortage", event(3*gib + 2), known(2*gib + gib/2 + 2), api.OOMShortage},
		{"demand twice the floor but under floor+256 MiB: shortage", push.OOMEvent{Requested: o(200 << 20), DeviceFree: o(0), Allocated: o(0), Reserved: o(0)}, known(100 << 20), api.OOMShortage},
		{"demand floor+256 MiB and over twice: peak", push.OOMEvent{Requested: o(356 << 20), DeviceFree: o(0), Allocated: o(0), Reserved: o(0)}, known(100 << 20), api.OOMPeak},
		{"floor not known yet: shortage", event(5 * gib), Floor{Bytes: 1, Known: false}, api.OOMShortage},
		{"peak needs allocated", push.OOMEvent{Requested: o(5 * gib), DeviceFree: o(0)}, known(1), api.OOMShortage},
		{"no request size: unknown", push.OOMEvent{DeviceFree: o(0)}, known(1), api.OOMUnknown},
		{"no free figure: unknown", push.OOMEvent{Requested: o(1)}, known(1), api.OOMUnknown},
		{"counter event: unknown", push.OOMEvent{Source: push.OOMSourceCounter, Allocated: o(1), Reserved: o(2)}, Floor{}, api.OOMUnknown},
		// A per-process fraction: the driver has 40 GiB free but the limit leaves
		// 8 − 7 = 1 GiB; 1 GiB + 1 cached = 2 GiB < 3 GiB requested.
		{"limit caps free: shortage", push.OOMEvent{Requested: o(3 * gib), DeviceFree: o(40 * gib), DeviceLimit: o(8 * gib), Allocated: o(6 * gib), Reserved: o(7 * gib)}, Floor{}, api.OOMShortage},
		{"limit caps free: fragmentation at 2 GiB", push.OOMEvent{Requested: o(2 * gib), DeviceFree: o(40 * gib), DeviceLimit: o(8 * gib), Allocated: o(6 * gib), Reserved: o(7 * gib)}, Floor{}, api.OOMFragmentation},
		{"limit without driver free", push.OOMEvent{Requested: o(2 * gib), DeviceLimit: o(8 * gib), Allocated: o(6 * gib), Reserved: o(7 * gib)}, Floor{}, api.OOMFragmentation},
		{"reserved above limit leaves nothing free", push.OOMEvent{Requested: o(1), DeviceLimit: o(8 * gib), Allocated: o(9 * gib), Reserved: o(9 * gib)}, Floor{}, api.OOMShortage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Classify(tt.ev, tt.floor)
			if r.Kind != tt.want {
				t.Errorf("kind = %s (%s), want %s", r.Kind, r.Reason, tt.want)
			}
			if r.Reason == "" {
				t.Error("no reason given")
			}
		})
	}
}

func TestClassifyFigures(t *testing.T) {
	r := Classify(push.OOMEvent{Requested: o(3 * gib), DeviceFree: o(40 * gib), DeviceLimit: o(8 * gib), Allocated: o(6 * gib), Reserved: o(7 * gib)}, Floor{})
	if r.Free != o(1*gib) || r.Cached != o(1*gib) || r.Demand != o(9*gib) {
		t.Errorf("free %v cached %v demand %v, want 1 GiB, 1 GiB, 9 GiB", r.Free, r.Cached, r.Demand)
	}
}
