package apiserver

import (
	"github.com/vram-exporter/vram_exporter/api"
	"github.com/vram-exporter/vram_exporter/join"
	"github.com/vram-exporter/vram_exporter/push"
)

// oomStats converts the join's OOM stats; nil stays null.
func oomStats(s *join.OOMStats) *api.OOM {
	if s == nil {
		return nil
	}
	out := &api.OOM{Events: make(map[api.OOMKind]uint64, len(api.OOMKinds()))}
	for _, k := range api.OOMKinds() {
		out.Events[k] = s.Events[k]
	}
	if l := s.Last; l != nil {
		e := &api.OOMEvent{
			Seq: l.Event.Seq, Kind: l.Result.Kind, Source: l.Event.Source, Time: l.Time.UTC(),
			RequestedBytes: opt(l.Event.Requested), FreeBytes: opt(l.Result.Free), CachedBytes: opt(l.Result.Cached),
			AllocatedBytes: opt(l.Event.Allocated), ReservedBytes: opt(l.Event.Reserved),
			InactiveSplitBytes: opt(l.Event.InactiveSplit), LargestFreeBlockBytes: opt(l.Event.LargestFreeBlock),
			Reason: l.Result.Reason,
		}
		if l.Floor.Known {
			e.FloorBytes = opt(push.Optional{Value: l.Floor.Bytes, Set: true})
		}
		out.Last = e
	}
	return out
}

func phasePeaks(ps []push.PhasePeak) []api.PhasePeak {
	out := make([]api.PhasePeak, 0, len(ps))
	for _, p := range ps {
		out = append(out, api.PhasePeak{Phase: p.Phase, PeakAllocatedBytes: p.PeakAllocated})
	}
	return out
}

func trtEngines(es []push.TRTEngine) []api.TRTEngine {
	out := make([]api.TRTEngine, 0, len(es))
	for _, e := range es {
		out = append(out, api.TRTEngine{Engine: e.Engine, Contexts: e.Contexts, ContextBytes: opt(e.ContextBytes),
			HeldBytes: opt(e.HeldBytes), WeightsBytes: opt(e.WeightsBytes), StreamableBytes: opt(e.StreamableBytes),
			StreamingBudgetBytes: opt(e.StreamingBudgetBytes)})
	}
	return out
}
