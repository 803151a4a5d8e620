// Inline renders the checklist below the prompt instead of in the alternate
// screen, the way a CLI asking "which files to commit?" would.
package main

import (
	"fmt"
	"os"

	tea "charm.land/bubbletea/v2"
	"github.com/ferncliff/checklist"
)

type model struct {
	list checklist.Model
	done bool
}

func (m model) Init() tea.Cmd { return nil }

func (m model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if k, ok := msg.(tea.KeyPressMsg); ok && (k.String() == "enter" || k.String() == "ctrl+c") {
		m.done = true
		return m, tea.Quit
	}
	var cmd tea.Cmd
	m.list, cmd = m.list.Update(msg)
	return m, cmd
}

func (m model) View() tea.View {
	if m.done {
		return tea.NewView("")
	}
	return tea.NewView("Stage which files? (max 3)\n" + m.list.View() + "\n")
}

func main() {
	files := []string{"go.mod", "checklist.go", "view.go", "keys.go", "README.md"}
	items := make([]checklist.Item, len(files))
	for i, f := range files {
		items[i] = checklist.Item{Title: f}
	}
	final, err := tea.NewProgram(model{list: checklist.New(items, checklist.WithLimit(3))}).Run()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, it := range final.(model).list.Selected() {
		fmt.Println(it.Title)
	}
}
