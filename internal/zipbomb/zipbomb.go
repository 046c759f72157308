package zipbomb

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/binary"
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
