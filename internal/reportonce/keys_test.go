package reportonce

import "testing"

func TestAKeyIsReportedOnceUntilTheSetStartsOver(t *testing.T) {
	var k Keys
	if !k.First("a") || k.First("a") {
		t.Fatal("a key must be first once, then not again")
	}
	for i := 0; i <= maxKeys; i++ {
		k.First(string(rune('b' + i)))
	}
	if !k.First("a") {
		t.Fatal("past the bound the set starts over, so memory stays bounded")
	}
}
