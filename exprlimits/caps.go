package exprlimits

import (
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	sprig "github.com/Masterminds/sprig/v3"
)

// MaxStringBytes bounds the string a capped function returns: a workflow over 1 MiB is not stored
// (extstatus.DefaultMaxWorkflowSize), so no value that long is of use, and a count of 1e12 must not be an
// allocation of a terabyte.
const MaxStringBytes = 1 << 20

// MaxListItems bounds the lists sprig's until, untilStep and seq make: as many as the longest loop
// (engine.MaxLoopItems), which is what such lists are made for.
const MaxListItems = 50_000

// MaxRandomLength bounds sprig's random strings and bytes: each character of randAlpha and its kin is one
// read of crypto/rand (1 MiB took 0.16 CPU-s); a password or a name suffix is far shorter.
const MaxRandomLength = 4096

// original is sprig's map as sprig builds it, for the functions wrapped below.
var original = sprig.GenericFuncMap()

// cappedSprig are sprig's functions whose result is sized by a number argument (or by a product of their
// arguments), with the argument types of sprig's own: expr-lang passes arguments as they are, so the
// wrappers accept exactly what the originals did.
var cappedSprig = map[string]any{
	"repeat": func(count int, s string) (string, error) {
		if repeatedOver(len(s), count) {
			return "", overLimit("sprig.repeat", MaxStringBytes, "bytes")
		}
		return original["repeat"].(func(int, string) string)(count, s), nil
	},
	"indent": func(spaces int, s string) (string, error) {
		if indentedLength(spaces, s) > MaxStringBytes {
			return "", overLimit("sprig.indent", MaxStringBytes, "bytes")
		}
		return original["indent"].(func(int, string) string)(spaces, s), nil
	},
	"nindent": func(spaces int, s string) (string, error) {
		if 1+indentedLength(spaces, s) > MaxStringBytes {
			return "", overLimit("sprig.nindent", MaxStringBytes, "bytes")
		}
		return original["nindent"].(func(int, string) string)(spaces, s), nil
	},
	"replace": func(old, replacement, s string) (string, error) {
		if replacedLength(s, old, replacement, -1) > MaxStringBytes {
			return "", overLimit("sprig.replace", MaxStringBytes, "bytes")
		}
		return original["replace"].(func(string, string, string) string)(old, replacement, s), nil
	},
	"until": func(count int) ([]int, error) {
		step := 1
		if count < 0 {
			step = -1
		}
		return boundedSteps("sprig.until", 0, count, step)
	},
	"untilStep": func(start, stop, step int) ([]int, error) {
		return boundedSteps("sprig.untilStep", start, stop, step)
	},
	"seq":          seq,
	"randAlphaNum": randomString("randAlphaNum"),
	"randAlpha":    randomString("randAlpha"),
	"randAscii":    randomString("randAscii"),
	"randNumeric":  randomString("randNumeric"),
	"randBytes": func(count int) (string, error) {
		if count > MaxRandomLength {
			return "", overLimit("sprig.randBytes", MaxRandomLength, "bytes")
		}
		return original["randBytes"].(func(int) (string, error))(count)
	},
}

func randomString(name string) func(int) (string, error) {
	generate := original[name].(func(int) string)
	return func(count int) (string, error) {
		if count > MaxRandomLength {
			return "", overLimit("sprig."+name, MaxRandomLength, "characters")
		}
		return generate(count), nil
	}
}

// overLimit is the error of a call whose result would exceed limit.
func overLimit(fn string, limit int, unit string) error {
	return fmt.Errorf("%s would return more than %d %s, wfguard's limit per call (see %s)", fn, limit, unit, Docs)
}

// repeatedOver reports whether count copies of an n-byte string exceed MaxStringBytes, without computing a
// product that could overflow.
func repeatedOver(n, count int) bool {
	return count > 0 && n > 0 && n > MaxStringBytes/count
}

// indentedLength is the length of sprig's indent: the pad before the string and after each newline.
func indentedLength(spaces int, s string) int {
	if spaces <= 0 {
		return len(s) // a negative count panics in strings.Repeat, which the evaluator reports
	}
	lines := strings.Count(s, "\n") + 1
	if spaces > MaxStringBytes/lines {
		return MaxStringBytes + 1
	}
	return len(s) + lines*spaces
}

// replacedLength is the length of s with the first n (all when n < 0) old replaced by replacement (an
// empty old matches before each rune and at the end, as strings.Replace does).
func replacedLength(s, old, replacement string, n int) int {
	grow := len(replacement) - len(old)
	if grow <= 0 {
		return len(s)
	}
	matches := utf8.RuneCountInString(s) + 1
	if old != "" {
		matches = strings.Count(s, old)
	}
	if n >= 0 {
		matches = min(matches, n)
	}
	if matches > 0 && grow > MaxStringBytes/matches {
		return MaxStringBytes + 1
	}
	return len(s) + matches*grow
}

// boundedSteps is sprig's untilStep(start, stop, step) (start, start+step, ... short of stop; none when
// step points away from stop) refused past MaxListItems values. It is not sprig's own: sprig's loop adds
// step past the largest int and wraps around, so untilStep(0, 9223372036854775807, 4611686018427387904)
// never ends, growing its list until the process dies.
func boundedSteps(fn string, start, stop, step int) ([]int, error) {
	values := []int{} // sprig's empty result is [], not null
	var count float64
	switch {
	case stop < start && step < 0:
		count = math.Ceil((float64(start) - float64(stop)) / -float64(step))
	case stop > start && step > 0:
		count = math.Ceil((float64(stop) - float64(start)) / float64(step))
	}
	if count > MaxListItems {
		return nil, overLimit(fn, MaxListItems, "items")
	}
	for i := start; (step > 0 && i < stop) || (step < 0 && i > stop); i += step {
		values = append(values, i)
		if (step > 0 && i > math.MaxInt-step) || (step < 0 && i < math.MinInt-step) {
			break // the next value is past the ints
		}
	}
	return values, nil
}

// seq is sprig's seq (one parameter: 1 to end; two: start to end; three: start, step, end; the end
// included, counting down when it is below the start) on boundedSteps, joined by spaces.
func seq(params ...int) (string, error) {
	start, step, end := 1, 1, 0
	switch len(params) {
	case 1:
		end = params[0]
	case 2:
		start, end = params[0], params[1]
	case 3:
		start, step, end = params[0], params[1], params[2]
	default:
		return "", nil
	}
	towards := 1
	if end < start {
		towards = -1
		if len(params) == 3 && step > 0 {
			return "", nil
		}
	}
	if len(params) < 3 {
		step = towards
	}
	values, err := boundedSteps("sprig.seq", start, end+towards, step)
	if err != nil {
		return "", err
	}
	return strings.Trim(strings.Join(strings.Fields(fmt.Sprint(values)), " "), "[]"), nil
}
