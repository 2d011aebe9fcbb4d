package config

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/alecthomas/kingpin/v2"
)

// The README's flag table is checked against the flags RegisterFlags really registers,
// and each default it states is checked by behaviour: passing that value explicitly must
// leave the configuration exactly as Default() has it. A default changed in code (or a
// flag added or removed) without the README therefore fails here, whatever the help
// text's wording.

// readmeFlag is one flag of the README's table with the default the table states.
type readmeFlag struct {
	name, def string
	line      int
}

func TestReadmeFlagTableMatchesFlags(t *testing.T) {
	table := readmeFlagTable(t)
	app := kingpin.New("vram_exporter", "test")
	RegisterFlags(app)
	var flags []*kingpin.FlagModel
	registered := map[string]*kingpin.FlagModel{}
	for _, fm := range app.Model().Flags {
		if fm.Name == "help" || fm.Hidden {
			continue
		}
		flags = append(flags, fm)
		registered[fm.Name] = fm
	}

	listed := map[string]readmeFlag{}
	for _, rf := range table {
		if prev, dup := listed[rf.name]; dup {
			t.Errorf("README.md lines %d and %d both list --%s", prev.line, rf.line, rf.name)
		}
		listed[rf.name] = rf
		if registered[rf.name] == nil {
			t.Errorf("README.md line %d lists --%s, which the daemon does not have; remove the row", rf.line, rf.name)
		}
	}
	for _, fm := range flags {
		name := fm.Name
		rf, ok := listed[name]
		if !ok {
			t.Errorf("README.md's flag table lacks --%s (default %s)", name, helpDefault(fm))
			continue
		}
		if err := behavesAsDefault(fm, rf.def); err != nil {
			t.Errorf("README.md line %d: --%s default %q: %v (--help says default %s)", rf.line, name, rf.def, err, helpDefault(fm))
		}
	}
}

// The help text's "default …" is documentation too: --help must not drift from Default().
func TestFlagHelpStatesTheDefault(t *testing.T) {
	app := kingpin.New("vram_exporter", "test")
	RegisterFlags(app)
	for _, fm := range app.Model().Flags {
		def := helpDefault(fm)
		if fm.Name == "help" || def == "" {
			continue
		}
		if err := behavesAsDefault(fm, helpValue(def)); err != nil {
			t.Errorf("--%s help says default %s: %v", fm.Name, def, err)
		}
	}
}

// A README cell that states a wrong default must fail, or the table test proves nothing.
func TestBehavesAsDefaultRejectsWrongDefaults(t *testing.T) {
	app := kingpin.New("vram_exporter", "test")
	RegisterFlags(app)
	for name, def := range map[string]string{
		"trend.short-window": "15m",
		"push.socket-mode":   "0600",
		"trace.max-bytes":    "128 MiB",
		"demo":               "on",
		"web.config.file":    "/etc/web.yml",
	} {
		if err := behavesAsDefault(app.GetFlag(name).Model(), def); err == nil {
			t.Errorf("--%s=%s accepted as the default", name, def)
		}
	}
	for name, def := range map[string]string{
		"trend.short-window": "10m0s",
		"trace.max-bytes":    "256 MiB",
		"demo":               "off",
		"web.config.file":    "",
		"config.check":       "",
	} {
		if err := behavesAsDefault(app.GetFlag(name).Model(), def); err != nil {
			t.Errorf("--%s=%q: %v", name, def, err)
		}
	}
}

var defaultInHelp = regexp.MustCompile(`default (.+)\)$`)

// helpDefault is what the flag's help text gives as its default, "" when it names none.
func helpDefault(fm *kingpin.FlagModel) string {
	if m := defaultInHelp.FindStringSubmatch(fm.Help); m != nil {
		return m[1]
	}
	return ""
}

// helpValue turns a help text's default into a flag value: `"" (plain HTTP)` is "".
func helpValue(def string) string {
	if strings.HasPrefix(def, `"`) {
		if q, err := strconv.QuotedPrefix(def); err == nil {
			s, _ := strconv.Unquote(q)
			return s
		}
	}
	return def
}

var byteSize = regexp.MustCompile(`^(\d+) ?(KiB|MiB|GiB)$`)

// behavesAsDefault passes def as the flag's value on a fresh command line (the README's
// notation: "off"/"on" for booleans, "256 MiB" for byte counts, "" for empty) and
// reports how the result differs from not passing the flag at all.
func behavesAsDefault(fm *kingpin.FlagModel, def string) error {
	var arg string
	switch {
	case fm.IsBoolFlag():
		switch def {
		case "", "off", "false":
			arg = "--no-" + fm.Name
		case "on", "true":
			arg = "--" + fm.Name
		default:
			return fmt.Errorf("a boolean's default is off or on")
		}
	default:
		if m := byteSize.FindStringSubmatch(def); m != nil {
			n, _ := strconv.ParseUint(m[1], 10, 64)
			n <<= map[string]uint{"KiB": 10, "MiB": 20, "GiB": 30}[m[2]]
			def = strconv.FormatUint(n, 10)
		}
		arg = "--" + fm.Name + "=" + def
	}
	app := kingpin.New("vram_exporter", "test")
	app.Terminate(nil)
	app.UsageWriter(io.Discard)
	app.ErrorWriter(io.Discard)
	f := RegisterFlags(app)
	if _, err := app.Parse([]string{arg}); err != nil {
		return fmt.Errorf("%s does not parse: %w", arg, err)
	}
	v, err := f.Load()
	if err != nil {
		return fmt.Errorf("%s is not a valid configuration: %w", arg, err)
	}
	got := v.Config()
	got.Push.SocketChosen = false // naming the socket is a choice, not a different default
	if !reflect.DeepEqual(got, Default()) {
		return fmt.Errorf("%s changes the configuration from Default(): %s", arg, strings.Join(diffFields("", reflect.ValueOf(got), reflect.ValueOf(Default())), "; "))
	}
	if f.CheckOnly() || f.ConfigFile() != "" {
		return fmt.Errorf("%s turns on --config.check or names a config file", arg)
	}
	return nil
}

// diffFields names each leaf field where got and want differ, as "Trend.ShortWindow 15m0s, not 10m0s".
func diffFields(path string, got, want reflect.Value) []string {
	if got.Kind() == reflect.Struct {
		var out []string
		for i := range got.NumField() {
			out = append(out, diffFields(strings.TrimPrefix(path+"."+got.Type().Field(i).Name, "."), got.Field(i), want.Field(i))...)
		}
		return out
	}
	if reflect.DeepEqual(got.Interface(), want.Interface()) {
		return nil
	}
	return []string{fmt.Sprintf("%s %v, not %v", path, got.Interface(), want.Interface())}
}

var flagName = regexp.MustCompile("`--([a-z0-9.-]+)`")

// readmeFlagTable reads the table under README.md's "## Flags" heading. A row may list
// several flags ("`--a` / `--b`" or "`--a`, `--b`"); its default cell then lists one
// default per flag with the same separator, empty for an empty default.
func readmeFlagTable(t *testing.T) []readmeFlag {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []readmeFlag
	inSection, inTable := false, false
	for i, line := range strings.Split(string(text), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			inSection = line == "## Flags"
			inTable = false
			continue
		case !inSection:
			continue
		case !strings.HasPrefix(line, "|"):
			if inTable {
				inSection = false // the table ended; later tables are not flags
			}
			continue
		}
		cells := splitRow(line)
		if !inTable {
			if len(cells) < 2 || cells[0] != "flag" || cells[1] != "default" {
				t.Fatalf("README.md line %d: the flag table's header is %q; want | flag | default | …", i+1, line)
			}
			inTable = true
			continue
		}
		if strings.Trim(cells[0], "- ") == "" { // the |---| line
			continue
		}
		names := flagName.FindAllStringSubmatch(cells[0], -1)
		if len(names) == 0 {
			t.Errorf("README.md line %d: no `--flag` in %q", i+1, cells[0])
			continue
		}
		defs := []string{cells[1]}
		if len(names) > 1 {
			// The separator is what stands between the first two flags.
			first := flagName.FindAllStringIndex(cells[0], 2)
			sep := strings.TrimSpace(cells[0][first[0][1]:first[1][0]])
			defs = splitOutsideBackticks(cells[1], sep)
			if len(defs) != len(names) {
				t.Errorf("README.md line %d: %d flags but %d defaults (separated by %q) in %q", i+1, len(names), len(defs), sep, line)
				continue
			}
		}
		for j, m := range names {
			out = append(out, readmeFlag{name: m[1], def: strings.Trim(strings.TrimSpace(defs[j]), "`"), line: i + 1})
		}
	}
	if len(out) == 0 {
		t.Fatal(`README.md has no flag table under "## Flags"`)
	}
	return out
}

// splitRow splits a Markdown table row into trimmed cells; "\|" stays inside a cell.
func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	var cells []string
	var cell strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cell.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cell.String()))
			cell.Reset()
		default:
			cell.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cell.String()))
}

// splitOutsideBackticks splits s at sep where sep is not inside a `code` span, so a
// default such as `/proc` survives a "/" separator.
func splitOutsideBackticks(s, sep string) []string {
	var parts []string
	inCode, start := false, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			inCode = !inCode
		} else if !inCode && strings.HasPrefix(s[i:], sep) {
			parts = append(parts, s[start:i])
			start = i + len(sep)
			i += len(sep) - 1
		}
	}
	return append(parts, s[start:])
}
