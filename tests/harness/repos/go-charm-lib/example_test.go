package checklist_test

import (
	"fmt"

	"github.com/ferncliff/checklist"
)

func ExampleModel_Selected() {
	m := checklist.New([]checklist.Item{
		{Title: "lint", Checked: true},
		{Title: "test"},
		{Title: "release", Checked: true},
	})
	for _, it := range m.Selected() {
		fmt.Println(it.Title)
	}
	// Output:
	// lint
	// release
}
