package console

import (
	"fmt"
	"strconv"
)

// chart is a bar chart drawn as inline SVG on the server: no script, no
// library. Bars carry a <title> (a tooltip and the screen reader's text),
// and the page shows the same figures in a table.
type chart struct {
	Title  string
	Label  string // the accessible name
	Width  int
	Height int
	Bars   []bar
	Max    int64
}

type bar struct {
	X, Y, W, H int
	Title      string
	Class      string
}

const chartW, chartH = 720, 160

func barChart(title, class string, labels []string, values []int64) chart {
	c := chart{Title: title, Label: title, Width: chartW, Height: chartH}
	for _, v := range values {
		c.Max = max(c.Max, v)
	}
	if len(values) == 0 {
		return c
	}
	w := chartW / len(values)
	for i, v := range values {
		h := 0
		if c.Max > 0 {
			h = int(int64(chartH-20) * v / c.Max)
		}
		c.Bars = append(c.Bars, bar{X: i * w, Y: chartH - h, W: max(w-2, 1), H: h, Class: class,
			Title: fmt.Sprintf("%s: %s", labels[i], strconv.FormatInt(v, 10))})
	}
	return c
}

func quotaCharts(rows []bucketRow) []chart {
	labels := make([]string, len(rows))
	series := map[string][]int64{}
	for i, b := range rows {
		labels[i] = b.Start.UTC().Format("01-02 15:00")
		series["allowed"] = append(series["allowed"], b.Allowed)
		series["denied"] = append(series["denied"], b.Denied)
		series["fuel"] = append(series["fuel"], b.Fuel)
		series["cpu"] = append(series["cpu"], b.CPU)
		series["wall"] = append(series["wall"], b.Wall)
	}
	return []chart{
		barChart("Calls allowed per hour", "ok", labels, series["allowed"]),
		barChart("Calls denied per hour", "bad", labels, series["denied"]),
		barChart("Fuel per hour", "", labels, series["fuel"]),
		barChart("CPU ms per hour", "", labels, series["cpu"]),
		barChart("Wall ms per hour", "", labels, series["wall"]),
	}
}

// sizeChart draws the tree size at each checkpoint, oldest first.
func sizeChart(rows []checkpointRow) *chart {
	if len(rows) == 0 {
		return nil
	}
	n := len(rows)
	labels := make([]string, n)
	values := make([]int64, n)
	for i, c := range rows {
		labels[n-1-i] = "checkpoint signed " + c.SignedAt.UTC().Format("2006-01-02 15:04:05")
		values[n-1-i] = c.Size
	}
	c := barChart("Tree size at each checkpoint", "", labels, values)
	return &c
}
