package checklist

import (
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// View renders the checklist. Embed it in your own model's View; it returns a
// plain string rather than a tea.View so it composes with other components.
func (m Model) View() string {
	var b strings.Builder
	if m.filterOn || m.filter != "" {
		b.WriteString(m.Styles.Filter.Render("/ " + m.filter))
		b.WriteByte('\n')
	}
	if len(m.visible) == 0 {
		b.WriteString(m.Styles.Empty.Render("No matches"))
		return b.String()
	}

	end := min(m.offset+m.height, len(m.visible))
	for row := m.offset; row < end; row++ {
		it := m.items[m.visible[row]]
		box := m.Styles.Unchecked.Render("[ ]")
		if it.Checked {
			box = m.Styles.Checked.Render("[x]")
		}
		title := m.Styles.Title.Render(it.Title)
		if it.Disabled {
			title = m.Styles.Disabled.Render(it.Title)
		}
		line := lipgloss.JoinHorizontal(lipgloss.Top, box, " ", title)
		if it.Detail != "" {
			line += " " + m.Styles.Detail.Render(it.Detail)
		}
		if m.width > 0 {
			line = ansi.Truncate(line, m.width-2, "…")
		}
		if row == m.cursor {
			line = m.Styles.Cursor.Render("›") + " " + line
		} else {
			line = "  " + line
		}
		b.WriteString(line)
		if row < end-1 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}
