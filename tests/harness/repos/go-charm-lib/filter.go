package checklist

import (
	tea "charm.land/bubbletea/v2"
	"github.com/sahilm/fuzzy"
)

// updateFilter handles input while the filter prompt is open.
func (m Model) updateFilter(msg tea.KeyPressMsg) Model {
	switch msg.String() {
	case "esc":
		m.filterOn, m.filter = false, ""
	case "enter":
		m.filterOn = false
	case "backspace":
		if len(m.filter) > 0 {
			m.filter = m.filter[:len(m.filter)-1]
		}
	default:
		m.filter += msg.Text
	}
	m.refilter()
	return m
}

func (m *Model) refilter() {
	m.visible = m.visible[:0]
	if m.filter == "" {
		for i := range m.items {
			m.visible = append(m.visible, i)
		}
	} else {
		titles := make([]string, len(m.items))
		for i, it := range m.items {
			titles[i] = it.Title
		}
		for _, match := range fuzzy.Find(m.filter, titles) {
			m.visible = append(m.visible, match.Index)
		}
	}
	m.cursor = min(m.cursor, max(len(m.visible)-1, 0))
}
