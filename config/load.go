package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// LoadFile reads a YAML config file over Default(): keys the file leaves out keep their
// defaults, an empty file is all defaults. Decoding is strict: an unknown key or a value
// of the wrong type is an error naming the line and key. LoadFile does not validate;
// call Validate on the result.
func LoadFile(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("config file %s: %w; check the path given to --config.file", path, err)
	}
	return parse(path, data)
}

func parse(name string, data []byte) (Config, error) {
	c := Default()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err := dec.Decode(&c)
	if errors.Is(err, io.EOF) {
		return Default(), nil
	}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return Config{}, rewriteTypeError(name, data, te)
	}
	if err != nil {
		return Config{}, fmt.Errorf("config file %s: %w (check the indentation and quoting near that line)", name, err)
	}
	// A second document would be silently ignored by Decode; say so instead.
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return Config{}, fmt.Errorf("config file %s: %w", name, err)
		}
		return Config{}, fmt.Errorf("config file %s: line %d: a second YAML document starts here; put all settings in one document", name, docLine(&extra))
	}
	return c, nil
}

func docLine(n *yaml.Node) int {
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		return n.Content[0].Line
	}
	return n.Line
}

// UnmarshalYAML decodes push, handling socket_mode by hand: yaml.v3 reads a bare 0660
// as octal but 660 as decimal, so only a quoted octal string is accepted. It uses the
// older callback form on purpose: the callback reuses the caller's decoder, keeping
// KnownFields strictness, which yaml.Node.Decode would drop.
func (p *Push) UnmarshalYAML(unmarshal func(any) error) error {
	type plain Push // same fields, no UnmarshalYAML, so no recursion
	w := struct {
		plain      `yaml:",inline"`
		SocketMode yaml.Node `yaml:"socket_mode"` // a value: yaml.v3 fills only Node, not *Node
	}{plain: plain(*p)}

	var problems []string
	if err := unmarshal(&w); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return err
		}
		problems = append(problems, te.Errors...)
	}
	*p = Push(w.plain)
	var named struct {
		Socket *string `yaml:"socket"`
	}
	if unmarshal(&named) == nil && named.Socket != nil {
		p.SocketChosen = true
	}
	if n := &w.SocketMode; !n.IsZero() && n.ShortTag() != "!!null" {
		m, err := modeFromNode(n)
		if err != nil {
			problems = append(problems, fmt.Sprintf("line %d: push.socket_mode: %v", n.Line, err))
		} else {
			p.SocketMode = m
		}
	}
	if len(problems) > 0 {
		// A TypeError lets the decoder carry on and report every problem in the file.
		return &yaml.TypeError{Errors: problems}
	}
	return nil
}

func modeFromNode(n *yaml.Node) (os.FileMode, error) {
	if n.Kind != yaml.ScalarNode {
		return 0, errors.New(`is not an octal string; write it quoted, like "0660"`)
	}
	if n.ShortTag() == "!!int" {
		return 0, fmt.Errorf(`%s is a bare number, which YAML may read as decimal or as octal; quote it as an octal string, like "0660"`, n.Value)
	}
	return parseMode(n.Value)
}

// parseMode reads an octal mode string such as "0660", "660" or "0o660". Which modes
// the socket may have is push's rule (push.ServerOptions.Check), applied by Validate.
func parseMode(s string) (os.FileMode, error) {
	digits := strings.TrimPrefix(s, "0o")
	v, err := strconv.ParseUint(digits, 8, 32)
	if err != nil || digits == "" || digits[0] == '+' {
		return 0, fmt.Errorf(`%q is not an octal mode; write octal digits, like "0660"`, s)
	}
	return os.FileMode(v), nil
}

var (
	unknownFieldRE = regexp.MustCompile(`^line (\d+): field (.+) not found in type .+$`)
	wrongTypeRE    = regexp.MustCompile("(?s)^line (\\d+): cannot unmarshal (!!\\w+)(?: `(.*)`)? into .+$")
)

// rewriteTypeError turns yaml.v3's messages, which name Go types ("field x not found in
// type config.Web"), into ones that name the YAML key a user wrote. yaml.v3 reports only
// a line, so the file is parsed again into nodes to find which key sits on that line.
func rewriteTypeError(name string, data []byte, te *yaml.TypeError) error {
	var root yaml.Node
	_ = yaml.Unmarshal(data, &root) // Decode already parsed it, so this cannot fail
	var idx []entry
	index(&root, nil, &idx)

	// Push.UnmarshalYAML reports socket_mode after the rest of push; sort so the
	// messages read top to bottom like the file.
	msgs := slices.Clone(te.Errors)
	slices.SortStableFunc(msgs, func(a, b string) int { return lineOf(a) - lineOf(b) })
	errs := make([]error, 0, len(msgs))
	for _, msg := range msgs {
		errs = append(errs, fmt.Errorf("config file %s: %s", name, rewriteOne(msg, idx)))
	}
	return errors.Join(errs...)
}

func lineOf(msg string) int {
	var n int
	fmt.Sscanf(msg, "line %d:", &n)
	return n
}

func rewriteOne(msg string, idx []entry) string {
	if m := unknownFieldRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		for _, e := range idx {
			if e.key.Line == line && e.key.Value == m[2] {
				parent := e.path[:len(e.path)-1]
				where := "at the top level"
				if len(parent) > 0 {
					where = "in " + strings.Join(parent, ".")
				}
				msg := fmt.Sprintf("line %d: unknown key %q %s", line, m[2], where)
				if keys := knownKeys(parent); len(keys) > 0 {
					msg += "; known keys: " + strings.Join(keys, ", ")
				}
				return msg
			}
		}
		return msg
	}
	if m := wrongTypeRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		e, ok := findValue(idx, line, m[2], m[3])
		if !ok {
			return msg
		}
		key := strings.Join(e.path, ".")
		return fmt.Sprintf("line %d: %s: %s %s", line, key, showNode(e.value), expectation(e.path))
	}
	// Anything else is already in our words (Push.UnmarshalYAML) or rare enough that
	// yaml.v3's own text, which keeps its line number, serves.
	return msg
}

// entry is one key of the file with the path of keys that leads to it.
type entry struct {
	path       []string
	key, value *yaml.Node
}

func index(n *yaml.Node, path []string, out *[]entry) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			index(c, path, out)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := append(append([]string(nil), path...), k.Value)
			*out = append(*out, entry{path: p, key: k, value: v})
			index(v, p, out)
		}
	}
}

// findValue picks the key whose value yaml.v3 complained about. Several keys can share a
// line in flow style ({a: 1, b: 2}), so the tag and the (possibly truncated) text decide.
func findValue(idx []entry, line int, tag, text string) (entry, bool) {
	var found []entry
	for _, e := range idx {
		if e.value.Line == line && e.value.ShortTag() == tag {
			found = append(found, e)
		}
	}
	prefix := strings.TrimSuffix(text, "...")
	for _, e := range found {
		if e.value.Value == text || (strings.HasSuffix(text, "...") && strings.HasPrefix(e.value.Value, prefix)) {
			return e, true
		}
	}
	if len(found) > 0 {
		return found[0], true
	}
	return entry{}, false
}

func showNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return strconv.Quote(n.Value)
}

var durationType = reflect.TypeOf(time.Duration(0))

// expectation says what the key at path takes, in the words a user would write it.
func expectation(path []string) string {
	t := typeAt(path)
	if t == nil {
		return "has the wrong type"
	}
	switch {
	case t == durationType:
		return `is not a duration; write a number with a unit, like "30s", "15m" or "2h"`
	case t.Kind() == reflect.Struct:
		return fmt.Sprintf("is not a mapping of keys; indent the keys of %s below it (known keys: %s)", strings.Join(path, "."), strings.Join(knownKeys(path), ", "))
	}
	switch t.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "is not a whole number; write a non-negative integer without quotes or units, like 4096"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "is not a whole number; write an integer without quotes, like 4096"
	case reflect.Float32, reflect.Float64:
		return "is not a number; write a number without quotes, like 0.8"
	case reflect.Bool:
		return "is not true or false"
	case reflect.String:
		return "is not a single value; write a string, quoted if it holds special characters"
	}
	return "has the wrong type"
}

// typeAt follows YAML keys through the Config type; nil if a key is not a field.
func typeAt(path []string) reflect.Type {
	t := reflect.TypeOf(Config{})
	for _, k := range path {
		if t.Kind() != reflect.Struct {
			return nil
		}
		f, ok := fieldByKey(t, k)
		if !ok {
			return nil
		}
		t = f.Type
	}
	return t
}

func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if f := t.Field(i); yamlKey(f) == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// yamlKey is the key a field is written as; fields yaml skips but that the package
// decodes by hand (push.socket_mode) carry it in a config tag.
func yamlKey(f reflect.StructField) string {
	k, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if k == "-" {
		return f.Tag.Get("config")
	}
	return k
}

// knownKeys lists the keys accepted under path, in the order the schema documents them.
func knownKeys(path []string) []string {
	t := typeAt(path)
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var keys []string
	for i := range t.NumField() {
		if k := yamlKey(t.Field(i)); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

// ListenAddresses is web.listen_address: one "host:port" string, the form every earlier
// configuration file used, or a list of them.
type ListenAddresses []string

// UnmarshalYAML accepts a string or a list of strings. It uses the callback form, like
// Push's, so the caller's decoder (and its strictness) decodes the value.
func (l *ListenAddresses) UnmarshalYAML(unmarshal func(any) error) error {
	var one string
	if err := unmarshal(&one); err == nil {
		*l = ListenAddresses{one}
		return nil
	}
	var many []string
	if err := unmarshal(&many); err != nil {
		return &yaml.TypeError{Errors: []string{`web.listen_address is neither a "host:port" string nor a list of them; write ":10090" or [":10090", "[::1]:10091"]`}}
	}
	*l = many
	return nil
}
