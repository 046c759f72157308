package zipbomb

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/binary"
	"math/rand/v2"
	"strings"
)

// Prefix and Suffix enclose the message of the one node CompressedNodes holds.
const (
	Prefix = `{"bomb":{"id":"bomb","name":"bomb","type":"Pod","phase":"Succeeded","message":"`
	Suffix = `"}}`
)

// CompressedNodes is status.compressedNodes (base64 of gzip) holding one node whose message is n bytes of
// 'a': valid nodes JSON that gzip shrinks about 1,000:1, written without holding the n bytes. stated, when
// not 0, replaces the size the gzip trailer states (its CRC is left as it was).
func CompressedNodes(n, stated int) string {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	// Writes to a bytes.Buffer do not fail.
	_, _ = zw.Write([]byte(Prefix))
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	for left := n; left > 0; left -= len(chunk) {
		_, _ = zw.Write(chunk[:min(left, len(chunk))])
	}
	_, _ = zw.Write([]byte(Suffix))
	_ = zw.Close()
	raw := buf.Bytes()
	if stated != 0 {
		binary.LittleEndian.PutUint32(raw[len(raw)-4:], uint32(stated))
	}
	return base64.StdEncoding.EncodeToString(raw)
}

// ArtifactsJSON is nodes JSON holding one node whose inputs hold n empty artifacts: 3 bytes of JSON each,
// each a 224-byte wfv1.Artifact once decoded. Its message is padding bytes of letters that gzip cannot
// shrink, so that the whole stays under an inflate ratio.
func ArtifactsJSON(n, padding int) []byte {
	var b bytes.Buffer
	b.Grow(3*n + padding + 128)
	b.WriteString(`{"bomb":{"id":"bomb","name":"bomb","type":"Pod","phase":"Running","message":"`)
	letters := "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	r := rand.New(rand.NewPCG(1, 2)) // the same bytes every run
	for range padding {
		b.WriteByte(letters[r.IntN(len(letters))])
	}
	b.WriteString(`","inputs":{"artifacts":[`)
	b.WriteString(strings.TrimSuffix(strings.Repeat("{},", n), ","))
	b.WriteString(`]}}}`)
	return b.Bytes()
}

// CompressedArtifacts is status.compressedNodes of ArtifactsJSON(n, ...) padded until the JSON is at most
// ratio times its gzip: every bound on the JSON's size passes, what it decodes to does not.
func CompressedArtifacts(n, ratio int) string {
	for padding := 1 << 10; ; padding *= 2 {
		data := ArtifactsJSON(n, padding)
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write(data)
		_ = zw.Close()
		if len(data) <= ratio*buf.Len() {
			return base64.StdEncoding.EncodeToString(buf.Bytes())
		}
	}
}
