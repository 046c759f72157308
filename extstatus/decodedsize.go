package extstatus

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// What decoding JSON allocates is not what it reads: `{}` in an array of artifacts is 3 bytes of JSON and a
// 224-byte wfv1.Artifact. DecodedSize walks the JSON beside the Go type it decodes into, without allocating,
// and adds up what encoding/json would allocate for it, so that a decoding can be refused before it starts.

// Allocation costs the estimate charges, from Go's runtime (amd64; go1.26): a swiss-table map entry holds its key
// and value (a value over 128 bytes by pointer) in groups of 8 slots filled to between 7/16 and 7/8, so an
// entry costs its slot twice; a map header is 48 bytes; a value stored in an interface is boxed.
const (
	mapHeader     = 48
	mapSlotFactor = 2
	maxInlineElem = 128
	ifaceSize     = 16
	stringHeader  = 16
	sliceHeader   = 24
	boxedNumber   = 8 // encoding/json's float64 in an interface
	// sliceGrowth is how much more than its length a slice grown one element at a time holds: encoding/json
	// grows with reflect's Grow(1), by half again past 256 elements (1.25 rounded up to size classes).
	sliceGrowthNum, sliceGrowthDen = 5, 4
	// maxDepth is encoding/json's nesting limit: deeper input fails before anything is decoded.
	maxDepth = 10000
)

type shapeKind uint8

const (
	kindScalar   shapeKind = iota // bool, numbers: nothing beyond its slot
	kindString                    // its bytes
	kindPointer                   // its target's slot and what that holds
	kindSlice                     // a slot per element, grown
	kindArray                     // fixed elements, in place
	kindMap                       // a header, a slot per entry
	kindStruct                    // its fields, in place
	kindAny                       // an interface: what encoding/json's generic decoding allocates
	kindOwnBytes                  // a type with its own decoder that keeps at most the bytes it is given
	kindOwnAny                    // a type with its own decoder that keeps the bytes and decodes them generically
)

// shape is how a JSON value decodes into a Go type, for the estimate.
type shape struct {
	kind shapeKind
	size int64 // the Go type's size: what one slot of it costs in a slice, a map or behind a pointer
	// elem is a pointer's target, a slice's or array's element, a map's value; for kindOwnAny, the typed
	// decoding it also makes, if any (ParallelSteps).
	elem *shape
	// key is a map's key.
	key *shape
	// fields are a struct's fields by JSON name, exact and folded as encoding/json matches them.
	fields, folded map[string]field
}

type field struct {
	shape *shape
	// via is the size of the structs behind embedded pointers that setting this field allocates.
	via int64
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	anyShape        = &shape{kind: kindAny, size: ifaceSize}
	scalarShape     = &shape{kind: kindScalar}
	shapes          sync.Map // reflect.Type → *shape
	shapesMu        sync.Mutex
)

// ownDecoders are the types reachable from a Workflow that decode themselves, and what they keep. Any other
// such type is charged its bytes and a generic decoding of them (kindOwnAny), what AnyString and Plugin do;
// TestEveryTypeThatDecodesItselfIsKnown lists them so that a new one is looked at.
var ownDecoders = map[reflect.Type]reflect.Type{
	// These keep at most their bytes: a parsed time, a quantity and its string, a string or an int, raw JSON.
	reflect.TypeFor[metav1.Time]():        nil,
	reflect.TypeFor[resource.Quantity]():  nil,
	reflect.TypeFor[intstr.IntOrString](): nil,
	reflect.TypeFor[metav1.FieldsV1]():    nil,
	reflect.TypeFor[wfv1.Amount]():        nil,
	reflect.TypeFor[wfv1.Item]():          nil,
	// ParallelSteps decodes its array generically to check the keys, then into []WorkflowStep.
	reflect.TypeFor[wfv1.ParallelSteps](): reflect.TypeFor[[]wfv1.WorkflowStep](),
}

// shapeOf returns t's shape, built once.
func shapeOf(t reflect.Type) *shape {
	if s, ok := shapes.Load(t); ok {
		return s.(*shape)
	}
	shapesMu.Lock()
	defer shapesMu.Unlock()
	building := map[reflect.Type]*shape{}
	s := buildShape(t, building)
	for t, s := range building {
		shapes.Store(t, s)
	}
	return s
}

// buildShape builds t's shape; building holds those being built, so that recursive types end.
func buildShape(t reflect.Type, building map[reflect.Type]*shape) *shape {
	if s, ok := shapes.Load(t); ok {
		return s.(*shape)
	}
	if s, ok := building[t]; ok {
		return s
	}
	s := &shape{size: int64(t.Size())}
	building[t] = s
	if also, ok := ownDecoders[t]; ok {
		s.kind = kindOwnBytes
		if also != nil {
			s.kind, s.elem = kindOwnAny, buildShape(also, building)
		}
		return s
	}
	if t.Kind() != reflect.Pointer && (reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler)) {
		s.kind = kindOwnAny
		return s
	}
	switch t.Kind() {
	case reflect.String:
		s.kind = kindString
	case reflect.Pointer:
		s.kind, s.elem = kindPointer, buildShape(t.Elem(), building)
	case reflect.Slice:
		s.kind, s.elem = kindSlice, buildShape(t.Elem(), building)
	case reflect.Array:
		s.kind, s.elem = kindArray, buildShape(t.Elem(), building)
	case reflect.Map:
		s.kind, s.key, s.elem = kindMap, buildShape(t.Key(), building), buildShape(t.Elem(), building)
	case reflect.Interface:
		s.kind = kindAny
	case reflect.Struct:
		s.kind = kindStruct
		s.fields, s.folded = map[string]field{}, map[string]field{}
		depths := map[string]int{}
		addFields(s, t, 0, 0, depths, building)
	default:
		s.kind = kindScalar
	}
	return s
}

// addFields adds t's JSON fields to s as encoding/json names them: embedded structs without a name are
// flattened, the shallowest field of a name wins (encoding/json drops names ambiguous at one depth; the
// estimate keeps the first, which can only charge more).
func addFields(s *shape, t reflect.Type, depth int, via int64, depths map[string]int, building map[reflect.Type]*shape) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
				if et.Kind() == reflect.Struct {
					addFields(s, et, depth+1, via+int64(et.Size()), depths, building)
					continue
				}
			} else if et.Kind() == reflect.Struct {
				addFields(s, et, depth+1, via, depths, building)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if d, ok := depths[name]; ok && d <= depth {
			continue
		}
		depths[name] = depth
		fs := field{shape: buildShape(f.Type, building), via: via}
		s.fields[name] = fs
		s.folded[string(foldName([]byte(name)))] = fs
	}
}

// foldName is encoding/json's: a key matches a field whose name it equals under Unicode simple folding.
func foldName(in []byte) []byte {
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); {
		if c := in[i]; c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			out = append(out, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(in[i:])
		for {
			r2 := unicode.SimpleFold(r)
			if r2 <= r {
				r = r2
				break
			}
			r = r2
		}
		out = utf8.AppendRune(out, r)
		i += n
	}
	return out
}

// DecodedSize estimates the bytes encoding/json allocates decoding data into a value of v's type (v is a
// pointer to it, as for json.Unmarshal), stopping once the estimate passes limit (0: no limit). Input that
// is not valid JSON is estimated as far as it reads: json.Unmarshal refuses it before decoding anything.
func DecodedSize(data []byte, v any, limit int64) int64 {
	return decodedSize(data, shapeOf(reflect.TypeOf(v).Elem()), limit)
}

func decodedSize(data []byte, s *shape, limit int64) int64 {
	e := estimate{data: data, limit: limit}
	if limit <= 0 {
		e.limit = 1<<63 - 1
	}
	e.value(s, 0)
	return e.total
}

// estimate is one walk over JSON. Its methods read the value at pos and charge what decoding it into a slot
// of the given shape allocates beyond the slot itself.
type estimate struct {
	data  []byte
	pos   int
	total int64
	limit int64
}

func (e *estimate) over() bool { return e.total > e.limit }

func (e *estimate) charge(n int64) { e.total += n }

func (e *estimate) skipSpace() {
	for e.pos < len(e.data) {
		switch e.data[e.pos] {
		case ' ', '\t', '\n', '\r':
			e.pos++
		default:
			return
		}
	}
}

// peek returns the next byte that is not space, or 0 at the end.
func (e *estimate) peek() byte {
	e.skipSpace()
	if e.pos >= len(e.data) {
		return 0
	}
	return e.data[e.pos]
}

// value reads one value into shape s. It returns false when the walk must stop: the limit is passed or the
// input is not JSON it can read.
func (e *estimate) value(s *shape, depth int) bool {
	if depth > maxDepth || e.over() {
		return false
	}
	switch s.kind {
	case kindOwnBytes, kindOwnAny:
		return e.decodedByItself(s, depth)
	}
	switch c := e.peek(); c {
	case '{':
		return e.object(s, depth)
	case '[':
		return e.array(s, depth)
	case '"':
		return e.stringInto(s)
	case 'n':
		return e.literal("null")
	case 't':
		return e.literal("true") && e.chargePointer(s)
	case 'f':
		return e.literal("false") && e.chargePointer(s)
	case 0:
		return false
	default:
		return e.numberInto(s)
	}
}

// decodedByItself reads a value of a type with its own decoder: the bytes it keeps and, for kindOwnAny,
// the generic decoding it makes of them and its typed one, if any.
func (e *estimate) decodedByItself(s *shape, depth int) bool {
	e.skipSpace()
	start := e.pos
	if !e.skip(depth) {
		return false
	}
	e.charge(roundUp(int64(e.pos - start))) // the bytes it keeps
	if s.kind == kindOwnBytes {
		return true
	}
	end := e.pos
	e.pos = start
	if !e.value(anyShape, depth) { // the generic decoding it makes of them
		return false
	}
	if s.elem != nil {
		e.pos = start
		if !e.value(s.elem, depth) {
			return false
		}
	}
	e.pos = end
	return true
}

func (e *estimate) stringInto(s *shape) bool {
	raw, ok := e.str(false)
	if !ok {
		return false
	}
	switch s.kind {
	case kindString, kindSlice: // a []byte is base64: fewer bytes than the string
		e.charge(roundUp(int64(len(raw))))
	case kindAny:
		e.charge(stringHeader + roundUp(int64(len(raw))))
	case kindPointer:
		e.charge(s.elem.size)
		if s.elem.kind == kindString || s.elem.kind == kindAny {
			e.charge(roundUp(int64(len(raw))))
		}
	}
	return true
}

func (e *estimate) numberInto(s *shape) bool {
	if !e.number() {
		return false
	}
	if s.kind == kindAny {
		e.charge(boxedNumber)
	}
	return e.chargePointer(s)
}

// chargePointer charges the target of a pointer to a scalar.
func (e *estimate) chargePointer(s *shape) bool {
	if s.kind == kindPointer {
		e.charge(s.elem.size)
	}
	return true
}

func (e *estimate) object(s *shape, depth int) bool {
	e.pos++ // {
	target := s
	for target.kind == kindPointer { // a pointer to a struct or a map: its target is allocated
		e.charge(target.elem.size)
		target = target.elem
	}
	switch target.kind {
	case kindMap, kindAny:
		e.charge(mapHeader)
	}
	if e.peek() == '}' {
		e.pos++
		return true
	}
	for {
		if !e.member(target, depth) {
			return false
		}
		if more, ok := e.next('}'); !more {
			return ok
		}
	}
}

// member reads one "key": value of an object decoded into target.
func (e *estimate) member(target *shape, depth int) bool {
	if e.peek() != '"' {
		return false
	}
	key, ok := e.str(true)
	if !ok {
		return false
	}
	if e.peek() != ':' {
		return false
	}
	e.pos++
	child := e.memberSlot(target, key)
	if child == nil {
		// A field encoding/json does not know, or a mismatched type: skipped, nothing allocated.
		return e.skip(depth + 1)
	}
	return e.value(child, depth+1)
}

// memberSlot charges what setting key in target allocates and returns the shape its value decodes into,
// nil when it is not decoded.
func (e *estimate) memberSlot(target *shape, key []byte) *shape {
	switch target.kind {
	case kindStruct:
		f, found := target.fieldNamed(key)
		if !found {
			return nil
		}
		e.charge(f.via)
		return f.shape
	case kindMap:
		e.charge(mapSlotFactor*(target.key.size+min(target.elem.size, 8+maxInlineElem)) + roundUp(int64(len(key))))
		if target.elem.size > maxInlineElem {
			e.charge(target.elem.size) // the value is stored apart, the slot holds a pointer
		}
		return target.elem
	case kindAny:
		e.charge(mapSlotFactor*(stringHeader+ifaceSize) + roundUp(int64(len(key))))
		return anyShape
	}
	return nil
}

// next reads what follows a member or an element: a comma before another (more), or end, which closes
// them (ok); anything else is not JSON.
func (e *estimate) next(end byte) (more, ok bool) {
	switch e.peek() {
	case ',':
		e.pos++
		return true, true
	case end:
		e.pos++
		return false, true
	}
	return false, false
}

// fieldNamed finds the field a key decodes into, as encoding/json does: exactly, else by folded name.
func (s *shape) fieldNamed(key []byte) (field, bool) {
	if f, ok := s.fields[string(key)]; ok {
		return f, true
	}
	f, ok := s.folded[string(foldName(key))]
	return f, ok
}

func (e *estimate) array(s *shape, depth int) bool {
	e.pos++ // [
	target, perElem := s, int64(0)
	if s.kind == kindPointer {
		e.charge(s.elem.size)
		target = s.elem
	}
	var elem *shape
	switch target.kind {
	case kindSlice:
		elem, perElem = target.elem, target.elem.size
	case kindArray:
		elem = target.elem
	case kindAny:
		e.charge(sliceHeader)
		elem, perElem = anyShape, ifaceSize
	}
	// A slot per element, grown as encoding/json grows it: charged as they come, so a long array stops the
	// walk at the limit.
	perElem = perElem * sliceGrowthNum / sliceGrowthDen
	if e.peek() == ']' {
		e.pos++
		return true
	}
	for {
		e.charge(perElem)
		var ok bool
		if elem == nil {
			ok = e.skip(depth + 1)
		} else {
			ok = e.value(elem, depth+1)
		}
		if !ok {
			return false
		}
		if more, ok := e.next(']'); !more {
			return ok
		}
	}
}

// skip reads a value that is not decoded.
func (e *estimate) skip(depth int) bool {
	before := e.total
	ok := e.value(scalarShape, depth)
	e.total = before
	return ok
}

// str reads a string and returns its bytes between the quotes, unescaped when they hold an escape and
// unescape is set: keys are matched unescaped, as encoding/json does; of a value only the length counts,
// which escapes only lengthen.
func (e *estimate) str(unescape bool) ([]byte, bool) {
	e.pos++ // "
	start, escaped := e.pos, false
	for {
		i := bytes.IndexByte(e.data[e.pos:], '"')
		if i < 0 {
			e.pos = len(e.data)
			return nil, false
		}
		if j := bytes.IndexByte(e.data[e.pos:e.pos+i], '\\'); j >= 0 {
			escaped = true
			e.pos += j + 2 // the backslash and the byte it escapes, perhaps a quote
			if e.pos > len(e.data) {
				return nil, false
			}
			continue
		}
		e.pos += i
		raw := e.data[start:e.pos]
		e.pos++
		if !escaped || !unescape {
			return raw, true
		}
		var s string
		if err := json.Unmarshal(e.data[start-1:e.pos], &s); err != nil {
			return nil, false
		}
		return []byte(s), true
	}
}

func (e *estimate) literal(word string) bool {
	if !bytes.HasPrefix(e.data[e.pos:], []byte(word)) {
		return false
	}
	e.pos += len(word)
	return true
}

func (e *estimate) number() bool {
	start := e.pos
	for e.pos < len(e.data) && strings.IndexByte("0123456789-+.eE", e.data[e.pos]) >= 0 {
		e.pos++
	}
	return e.pos > start
}

// roundUp is n rounded up to the 8 bytes the allocator hands out at least.
func roundUp(n int64) int64 { return (n + 7) &^ 7 }

// nodesShape and workflowShape are the shapes of what the package decodes.
func nodesShape() *shape    { return shapeOf(reflect.TypeFor[wfv1.Nodes]()) }
func workflowShape() *shape { return shapeOf(reflect.TypeFor[wfv1.Workflow]()) }
