package interop

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// What differs between two runs of the same scenario without meaning anything: generated names and the
// hashes derived from them, UIDs, times and durations, column widths and terminal control codes.
var (
	uidPattern       = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	rfc3339Pattern   = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})?`)
	goTimePattern    = regexp.MustCompile(`\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d+)? [+-]\d{4} [A-Z]+`)
	humanTimePattern = regexp.MustCompile(`[A-Z][a-z]{2} [A-Z][a-z]{2} \d{2} \d{2}:\d{2}:\d{2} [+-]\d{4}( \([^)]*\))?`)
	relativePattern  = regexp.MustCompile(`\b\d+ (seconds?|minutes?|hours?|days?)( ago| from now)?\b`)
	durationPattern  = regexp.MustCompile(`\b\d+(\.\d+)?(ms|s|m|h|d)(\s?\d+(\.\d+)?(ms|s|m|h|d))*\b`)
	hashPattern      = regexp.MustCompile(`-\d{4,}\b`)
	// sizePattern is the size argo's CLI logs before it writes a workflow: it counts every byte of the object.
	sizePattern  = regexp.MustCompile(`Workflow Size=\d+`)
	ansiPattern  = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)
	spacePattern = regexp.MustCompile(`[ \t]+`)
)

// Normalizer rewrites a scenario's output so that two runs compare: workflow names become W1, W2, ... in
// creation order (the same order under both controllers, as the same steps create them).
type Normalizer struct {
	// names maps each workflow name (and node ID) seen to its placeholder; order holds them longest first.
	names     map[string]string
	order     []string
	workflows int
}

// NewNormalizer returns a Normalizer knowing no names yet.
func NewNormalizer() *Normalizer { return &Normalizer{names: map[string]string{}} }

// Learn gives the next placeholders (W1, W2, ...) to workflow names not seen before, in the order given.
func (n *Normalizer) Learn(names ...string) {
	for _, name := range names {
		if _, ok := n.names[name]; !ok && name != "" {
			n.workflows++
			n.LearnAs(name, fmt.Sprintf("W%d", n.workflows))
		}
	}
}

// LearnAs replaces s by placeholder from now on, e.g. a node ID by "node(<its name>)": node IDs hash the
// workflow's name, so they differ between runs while the node's name does not.
func (n *Normalizer) LearnAs(s, placeholder string) {
	if _, ok := n.names[s]; ok || s == "" {
		return
	}
	n.names[s] = placeholder
	n.order = append(n.order, s)
	// Longest first, so that a name inside another (a workflow's in its node IDs) is replaced last.
	sort.SliceStable(n.order, func(i, j int) bool { return len(n.order[i]) > len(n.order[j]) })
}

// String normalizes one string: names, UIDs, times, durations and name-derived hashes.
func (n *Normalizer) String(s string) string {
	for _, name := range n.order {
		s = strings.ReplaceAll(s, name, n.names[name])
	}
	s = uidPattern.ReplaceAllString(s, "UID")
	s = rfc3339Pattern.ReplaceAllString(s, "TIME")
	s = goTimePattern.ReplaceAllString(s, "TIME")
	s = humanTimePattern.ReplaceAllString(s, "TIME")
	s = relativePattern.ReplaceAllString(s, "DURATION")
	s = durationPattern.ReplaceAllString(s, "DURATION")
	s = sizePattern.ReplaceAllString(s, "Workflow Size=N")
	return hashPattern.ReplaceAllString(s, "-HASH")
}

// Text normalizes a command's printed output line by line; of `argo watch` (and submit --watch), which
// redraws the workflow every second, only the last screen is kept.
func (n *Normalizer) Text(s string) []string {
	s = lastScreen(ansiPattern.ReplaceAllString(s, ""))
	var lines []string
	for _, line := range strings.Split(s, "\n") {
		line = sortResourcesDuration(strings.TrimSpace(spacePattern.ReplaceAllString(n.String(line), " ")))
		if line != "" {
			lines = append(lines, line)
		}
	}
	return lines
}

// sortResourcesDuration sorts the parts of argo's `ResourcesDuration:` line, which argo's CLI prints from a
// map (ResourcesDuration.String), so in an order that changes from one run to the next.
func sortResourcesDuration(line string) string {
	const label = "ResourcesDuration: "
	parts, ok := strings.CutPrefix(line, label)
	if !ok {
		return line
	}
	sorted := strings.Split(parts, ",")
	slices.Sort(sorted)
	return label + strings.Join(sorted, ",")
}

// lastScreen keeps what follows the last "Name:" line when the output repeats the workflow's header.
func lastScreen(s string) string {
	const header = "Name:"
	if strings.Count(s, "\n"+header)+btoi(strings.HasPrefix(s, header)) < 2 {
		return s
	}
	return s[strings.LastIndex(s, "\n"+header)+1:]
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// volatileFields are metadata the API server sets per object, and status durations measured in time.
var volatileFields = []string{"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields",
	"resourcesDuration", "estimatedDuration"}

// bookkeeping are annotations each controller keeps for itself (argo's record of the resourceVersion it last
// wrote; wfguard's wfguard.io/ records): not compared.
func bookkeeping(key string) bool {
	return key == "workflows.argoproj.io/last-seen-version" || strings.HasPrefix(key, "wfguard.io/")
}

// JSON normalizes a JSON document into sorted "path = value" lines: strings as String does, keys too
// (node IDs hold names), and the values of volatileFields replaced by "SET".
func (n *Normalizer) JSON(data string) ([]string, error) {
	var v any
	if err := json.Unmarshal([]byte(data), &v); err != nil {
		return nil, fmt.Errorf("reading the JSON output: %w", err)
	}
	var lines []string
	n.flatten("", v, &lines)
	slices.Sort(lines)
	return lines, nil
}

func (n *Normalizer) flatten(path string, v any, out *[]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			p := path + "." + n.String(k)
			if strings.HasSuffix(path, ".annotations") && bookkeeping(k) {
				continue
			}
			if slices.Contains(volatileFields, k) {
				*out = append(*out, p+" = SET")
				continue
			}
			n.flatten(p, child, out)
		}
	case []any:
		for i, child := range v {
			n.flatten(fmt.Sprintf("%s[%d]", path, i), child, out)
		}
	case string:
		*out = append(*out, fmt.Sprintf("%s = %q", path, n.String(v)))
	default:
		b, _ := json.Marshal(v)
		*out = append(*out, fmt.Sprintf("%s = %s", path, b))
	}
}
