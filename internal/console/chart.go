package console

import (
	"fmt"
	"strconv"
	"time"
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

// quotaCharts draws one bar per hour from since, for hours hours: an
// hour with no bucket is a zero, so the axis is time.
func quotaCharts(rows []bucketRow, since time.Time, hours int) []chart {
	labels := make([]string, hours)
	series := map[string][]int64{}
	for _, k := range []string{"allowed", "denied", "fuel", "cpu", "wall"} {
		series[k] = make([]int64, hours)
	}
	for i := range hours {
		labels[i] = since.Add(time.Duration(i) * time.Hour).UTC().Format("01-02 15:00")
	}
	for _, b := range rows {
		i := int(b.Start.Sub(since) / time.Hour)
		if i < 0 || i >= hours {
			continue
		}
		series["allowed"][i] += b.Allowed
		series["denied"][i] += b.Denied
		series["fuel"][i] += b.Fuel
		series["cpu"][i] += b.CPU
		series["wall"][i] += b.Wall
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
