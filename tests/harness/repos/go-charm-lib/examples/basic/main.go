package main

import (
	"fmt"
	"os"

	tea "charm.land/bubbletea/v2"
	"github.com/ferncliff/checklist"
)

type model struct {
	list     checklist.Model
	quitting bool
}

func (m model) Init() tea.Cmd { return nil }

func (m model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if msg, ok := msg.(tea.KeyPressMsg); ok {
		switch msg.String() {
		case "q", "ctrl+c", "enter":
			m.quitting = true
			return m, tea.Quit
		}
	}
	var cmd tea.Cmd
	m.list, cmd = m.list.Update(msg)
	return m, cmd
}

func (m model) View() tea.View {
	if m.quitting {
		return tea.NewView("")
	}
	v := tea.NewView("What should we pack?\n\n" + m.list.View() + "\n\nspace: toggle • enter: done\n")
	v.AltScreen = true
	return v
}

func main() {
	items := []checklist.Item{
		{Title: "Tent", Detail: "2 person"},
		{Title: "Sleeping bag"},
		{Title: "Headlamp", Checked: true},
		{Title: "Stove", Detail: "and fuel"},
		{Title: "Kayak", Disabled: true},
	}
	p := tea.NewProgram(model{list: checklist.New(items)})
	final, err := p.Run()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error running program:", err)
		os.Exit(1)
	}
	for _, it := range final.(model).list.Selected() {
		fmt.Println("✓", it.Title)
	}
}
