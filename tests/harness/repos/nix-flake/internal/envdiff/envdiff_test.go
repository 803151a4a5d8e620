package envdiff

import (
	"reflect"
	"testing"
)

func TestCompare(t *testing.T) {
	a := []string{"HOME=/home/a", "PATH=/bin", "OLD=1"}
	b := []string{"HOME=/home/a", "PATH=/bin:/usr/bin", "NEW=2", "EMPTY="}
	got := Compare(a, b)
	want := []Change{
		{Key: "EMPTY", Kind: '+'},
		{Key: "NEW", New: "2", Kind: '+'},
		{Key: "OLD", Old: "1", Kind: '-'},
		{Key: "PATH", Old: "/bin", New: "/bin:/usr/bin", Kind: '~'},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Compare() =\n%v\nwant\n%v", got, want)
	}
}

func TestChangeString(t *testing.T) {
	c := Change{Key: "PATH", Old: "/bin", New: "/usr/bin", Kind: '~'}
	if got, want := c.String(), "~ PATH: /bin -> /usr/bin"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
