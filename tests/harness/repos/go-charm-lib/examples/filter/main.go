package main

import (
	"fmt"
	"os"
	"strings"

	"charm.land/bubbles/v2/help"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/ferncliff/checklist"
)

var frame = lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).Padding(0, 1)

type model struct {
	list checklist.Model
	help help.Model
}

func (m model) Init() tea.Cmd { return tea.RequestBackgroundColor }

func (m model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.BackgroundColorMsg:
		m.list.Styles = checklist.DefaultStyles(msg.IsDark())
	case tea.KeyPressMsg:
		if msg.String() == "ctrl+c" {
			return m, tea.Quit
		}
	}
	var cmd tea.Cmd
	m.list, cmd = m.list.Update(msg)
	return m, cmd
}

func (m model) View() tea.View {
	body := frame.Render(m.list.View()) + "\n" + m.help.View(m.list.KeyMap)
	v := tea.NewView(body)
	v.AltScreen = true
	v.WindowTitle = "checklist: filter"
	return v
}

func main() {
	langs := strings.Fields("go rust zig odin nim crystal elixir gleam haskell ocaml scala kotlin swift")
	items := make([]checklist.Item, len(langs))
	for i, l := range langs {
		items[i] = checklist.Item{Title: l}
	}
	m := model{list: checklist.New(items, checklist.WithHeight(8)), help: help.New()}
	if _, err := tea.NewProgram(m).Run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
