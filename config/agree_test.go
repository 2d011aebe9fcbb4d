package config

import (
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/vram-exporter/vram_exporter/demo"
	"github.com/vram-exporter/vram_exporter/leak/trend"
	"github.com/vram-exporter/vram_exporter/push"
)

// daemonParts builds from c what the daemon builds from its settings before it serves
// (the trend engine, the push server and store, the demo node), the way the daemon
// does, and returns what each refused, as "key: problem" lines under the YAML key the
// refused field comes from. What no setting decides is left out: whether the socket's
// group exists, the procfs mount, the trace file and the port are facts of the host,
// found at start.
func daemonParts(t *testing.T, c Config) []string {
	t.Helper()
	var lines []string
	collect := func(section string, keys map[string]string, err error) {
		if err == nil {
			return
		}
		for _, line := range strings.Split(err.Error(), "\n") {
			// Each package words a problem "<package>: <Field>: <problem>".
			rest, ok := strings.CutPrefix(line, section+": ")
			field, problem, ok2 := strings.Cut(rest, ": ")
			if !ok || !ok2 {
				t.Errorf("%s refused with %q, not in the %q shape config can file under a key", section, line, section+": Field: problem")
				continue
			}
			key, known := keys[field]
			if !known {
				key = section + " (" + field + ")"
			}
			lines = append(lines, key+": "+problem)
		}
	}

	_, err := trend.NewEngine(c.Trend.EngineConfig())
	collect("trend", trendKeys, err)

	o := c.Push.ServerOptions()
	o.Group = ""
	if c.Push.Socket == "" {
		// Off: the daemon builds no server, but the options are still checked, so a file
		// that turns the socket on later is known good. A store is built either way.
		o.Path = push.DefaultSocketPath
	}
	store, storeErr := push.NewStoreWithOptions(c.Push.StoreOptions())
	collect("push", storeKeys, storeErr)
	if store == nil {
		store = push.NewStore(0, 0, nil) // the server's own checks still run
	}
	_, err = push.NewServer(o, store, zap.NewNop())
	if err == nil {
		// NewServer reads a zero option as "the default"; the daemon hands it what the user
		// set, so a zero the user wrote must be refused as written.
		err = o.Validate()
	}
	collect("push", pushKeys, err)

	_, err = demo.New(c.Demo.NodeConfig(), time.Unix(1_700_000_000, 0))
	collect("demo", demoKeys, err)
	return lines
}

type agreeCase struct {
	name string
	cfg  Config
}

// exampleConfigs finds every YAML file in the repository that decodes as a
// configuration (manifests and rule files do not: their keys are unknown here).
func exampleConfigs(t *testing.T) []agreeCase {
	t.Helper()
	var out []agreeCase
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			hidden := path != ".." && strings.HasPrefix(d.Name(), ".")
			if hidden || d.Name() == "node_modules" || path == filepath.Join("..", "config", "testdata") { // testdata: every file is a case already
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(path); ext != ".yml" && ext != ".yaml" {
			return nil
		}
		if c, err := LoadFile(path); err == nil {
			out = append(out, agreeCase{path, c})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(out, func(c agreeCase) bool { return c.name == "../scripts/gpu/short-trace.yml" }) {
		t.Errorf("the walk did not find scripts/gpu/short-trace.yml among %d example configs; is it still looking in the right place?", len(out))
	}
	return out
}

// deployedFlags are the daemon command lines the repository ships: the DaemonSet's args
// and the systemd unit's ExecStart.
func deployedFlags(t *testing.T) [][]string {
	t.Helper()
	var out [][]string
	for _, f := range []struct {
		path string
		re   *regexp.Regexp
	}{
		{"../deploy/kubernetes/daemonset.yaml", regexp.MustCompile(`(?m)^\s*- (--[a-z][a-z0-9.-]*=\S*)\s*$`)},
		{"../deploy/systemd/vram_exporter.service", regexp.MustCompile(`(?m)^\s+(--[a-z][a-z0-9.-]*=\S*)(?:\s*\\)?$`)},
	} {
		b, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		var args []string
		for _, m := range f.re.FindAllStringSubmatch(string(b), -1) {
			args = append(args, m[1])
		}
		if len(args) < 3 {
			t.Fatalf("found only %q in %s; has its command line moved?", args, f.path)
		}
		out = append(out, append([]string{f.path}, args...))
	}
	return out
}

// TestCheckAgreesWithTheDaemonsStart is --config.check against the daemon's start for
// every configuration the repository has (testdata, example configs, deployed command
// lines) and the flag cases that once disagreed: what config reports is exactly its own
// rules plus what the daemon's parts refuse, in their words under the user's key. So a
// configuration --config.check accepts builds, and one it refuses is refused for a
// reason the daemon has too or that config alone owns (ownProblems).
func TestCheckAgreesWithTheDaemonsStart(t *testing.T) {
	var cases []agreeCase
	files, err := filepath.Glob("testdata/*.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if c, err := LoadFile(f); err == nil { // a file that does not decode stops both alike
			cases = append(cases, agreeCase{f, c})
		}
	}
	cases = append(cases, exampleConfigs(t)...)

	type flagCase struct {
		name string
		args []string
	}
	flagCases := []flagCase{
		{"", []string{"--trend.short-window=2m"}},  // 4 buckets: config wanted 4, trend 5
		{"", []string{"--trend.long-window=10m"}},  // equal to the short window
		{"", []string{"--push.socket-mode=0"}},     // once read as "the default, 0660" by the server
		{"", []string{"--push.socket-mode=4770"}},  // setuid bits
		{"", []string{"--push.max-connections=0"}}, // once read as "the default, 4096" by the server
		{"", []string{"--push.max-series=0", "--push.max-processes=-1", "--push.idle-timeout=0s"}},
		{"", []string{"--trend.max-keys=0"}},
		{"", []string{"--push.socket=", "--push.socket-mode=0600"}},
		{"", []string{"--nvml.poll-interval=1m", "--push.ttl=2m"}}, // bucket 30s shorter than a poll
		{"README", []string{"--demo", "--demo.speed=60"}},
		{"README container", []string{"--path.procfs=/host/proc"}},
	}
	for _, d := range deployedFlags(t) {
		flagCases = append(flagCases, flagCase{d[0], d[1:]})
	}
	for _, fc := range flagCases {
		app, f := newApp(t)
		if _, err := app.Parse(fc.args); err != nil {
			t.Fatalf("Parse(%q) = %v", fc.args, err)
		}
		c, err := f.merged()
		if err != nil {
			t.Fatalf("%q: %v", fc.args, err)
		}
		name := fc.name
		if name == "" {
			name = strings.Join(fc.args, " ")
		}
		cases = append(cases, agreeCase{name, c})
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			if _, err := tc.cfg.Validate(); err != nil {
				got = strings.Split(err.Error(), "\n")
			}
			var want []string
			for _, p := range tc.cfg.ownProblems() {
				want = append(want, p.String())
			}
			want = append(want, daemonParts(t, tc.cfg)...)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("--config.check and the daemon's start disagree\n--config.check:\n  %s\nconfig's own rules + what the daemon's parts refuse:\n  %s",
					strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
		})
	}
}

// The 2m window of the issue: --config.check must refuse it in trend's words, since
// the engine does.
func TestShortWindowOfFourBucketsIsRefusedByCheck(t *testing.T) {
	app, f := newApp(t)
	if _, err := app.Parse([]string{"--config.check", "--trend.short-window=2m"}); err != nil {
		t.Fatal(err)
	}
	_, err := f.Load()
	want := "trend.short_window: 2m is shorter than 5 buckets of 30s; use at least 2m30s"
	if err == nil || err.Error() != want {
		t.Errorf("Load() = %v, want %s", err, want)
	}
}

// Every field a package's Check may name has a YAML key that exists in the schema, so
// no problem is filed under a made-up key.
func TestConsumerKeysNameSchemaKeys(t *testing.T) {
	schema := schemaKeys(nil)
	for _, tc := range []struct {
		typ  reflect.Type
		keys map[string]string
		skip []string // fields no key sets
	}{
		{reflect.TypeOf(trend.Config{}), trendKeys, []string{"MaxWarmUp", "FastRate", "SlowRate"}},                                                            // the detector's own constants (docs/leak-detection.md), not settings
		{reflect.TypeOf(push.ServerOptions{}), pushKeys, []string{"MaxMessageBytes", "RatePerSecond", "Burst", "MaxConsecutiveRejects", "ReadPace", "Clock"}}, // ReadPace: the poll interval, set by the daemon
		{reflect.TypeOf(push.StoreOptions{}), storeKeys, []string{"Clock"}},
		{reflect.TypeOf(demo.Config{}), demoKeys, nil},
	} {
		for i := range tc.typ.NumField() {
			name := tc.typ.Field(i).Name
			key, ok := tc.keys[name]
			switch {
			case slices.Contains(tc.skip, name):
				if ok {
					t.Errorf("%s.%s is listed as keyless but maps to %s", tc.typ, name, key)
				}
			case !ok:
				t.Errorf("%s.%s has no YAML key in config's table; add it, or list it as keyless here", tc.typ, name)
			case !slices.Contains(schema, key):
				t.Errorf("%s.%s maps to %q, which is not a key of the schema", tc.typ, name, key)
			}
		}
		if len(tc.keys)+len(tc.skip) != tc.typ.NumField() {
			t.Errorf("%s: %d keys and %d keyless fields for %d fields; a key names a field that does not exist", tc.typ, len(tc.keys), len(tc.skip), tc.typ.NumField())
		}
	}
}

// The defaults are the consumers': a default changed in trend, push, nvml or demo is
// changed in config, the flag help and --config.check alike.
func TestDefaultsAreTheConsumers(t *testing.T) {
	d := Default()
	wantTrend := trend.DefaultConfig()
	wantTrend.MinRate = math.Round(wantTrend.MinRate) // the key takes whole bytes
	if got := d.Trend.EngineConfig(); got != wantTrend {
		t.Errorf("Default().Trend.EngineConfig() = %+v, want trend.DefaultConfig() in whole bytes %+v", got, wantTrend)
	}
	if got, want := d.Push.ServerOptions(), push.DefaultServerOptions(); got != want {
		t.Errorf("Default().Push.ServerOptions() = %+v, want push.DefaultServerOptions() %+v", got, want)
	}
	if got, want := d.Push.StoreOptions(), push.DefaultStoreOptions(); got != want {
		t.Errorf("Default().Push.StoreOptions() = %+v, want push.DefaultStoreOptions() %+v", got, want)
	}
	if got, want := d.Demo.NodeConfig(), demo.DefaultConfig(); got != want {
		t.Errorf("Default().Demo.NodeConfig() = %+v, want demo.DefaultConfig() %+v", got, want)
	}
}

func TestConversionsCarryEveryKey(t *testing.T) {
	c, err := LoadFile("testdata/good.yml")
	if err != nil {
		t.Fatal(err)
	}
	want := trend.DefaultConfig()
	want.Bucket, want.ShortWindow, want.LongWindow, want.WarmUp = time.Minute, 20*time.Minute, 4*time.Hour, 5*time.Minute
	want.MinRate, want.MinFit, want.MinDuration, want.MaxKeys = 34952, 0.9, 15*time.Minute, 512
	if got := c.Trend.EngineConfig(); got != want {
		t.Errorf("EngineConfig() = %+v, want %+v", got, want)
	}
	wantPush := push.DefaultServerOptions()
	wantPush.Path, wantPush.Mode, wantPush.Group, wantPush.MaxConnections = "/var/run/vram/push.sock", 0o640, "vram", 128
	wantPush.MaxConnectionsPerUID, wantPush.ConnectRatePerUID, wantPush.ConnectBurstPerUID = 64, 20, 32
	wantPush.FirstMessageTimeout, wantPush.IdleTimeout = 5*time.Second, 3*time.Minute
	if got := c.Push.ServerOptions(); got != wantPush {
		t.Errorf("ServerOptions() = %+v, want %+v", got, wantPush)
	}
	wantStore := push.StoreOptions{TTL: 45 * time.Second, MaxProcesses: 256, MaxDevicesPerProcess: 8, MaxPoolsPerProcess: 64, MaxSeries: 2048}
	if got := c.Push.StoreOptions(); got != wantStore {
		t.Errorf("StoreOptions() = %+v, want %+v", got, wantStore)
	}
	if got, want := c.Demo.NodeConfig(), (demo.Config{GPUs: 8, GPUMemoryBytes: 80 << 30, Seed: 42}); got != want {
		t.Errorf("NodeConfig() = %+v, want %+v", got, want)
	}
}
