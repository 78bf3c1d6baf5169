package console

import (
	"fmt"
	"sort"
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

// stackedChart is a bar chart whose bars stack one segment per series
// (the reasons of denials), with a legend; like chart, inline SVG, a
// <title> per segment, and the figures in a table beside it.
type stackedChart struct {
	Title  string
	Width  int
	Height int
	Max    int64 // the tallest bar's total
	Bars   []bar
	Legend []legendEntry
}

type legendEntry struct {
	Name  string
	Class string
	Total int64
}

// seriesClasses are the CSS classes of a stacked chart's series, in the
// legend's order; past the last, series share it.
var seriesClasses = []string{"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7"}

// denialChart draws one stacked bar per hour from since, for hours hours:
// each reason a segment.
func denialChart(rows []denialBucketRow, since time.Time, hours int) *stackedChart {
	c := &stackedChart{Title: "Calls denied per hour, by reason", Width: chartW, Height: chartH}
	totals := map[string]int64{}
	perHour := make([]map[string]int64, hours)
	for _, r := range rows {
		i := int(r.Start.Sub(since) / time.Hour)
		if i < 0 || i >= hours {
			continue
		}
		if perHour[i] == nil {
			perHour[i] = map[string]int64{}
		}
		perHour[i][r.Reason] += r.Denied
		totals[r.Reason] += r.Denied
	}
	reasons := make([]string, 0, len(totals))
	for r := range totals {
		reasons = append(reasons, r)
	}
	// The most frequent reason first (at the bottom of each bar).
	sort.Slice(reasons, func(i, j int) bool {
		if totals[reasons[i]] != totals[reasons[j]] {
			return totals[reasons[i]] > totals[reasons[j]]
		}
		return reasons[i] < reasons[j]
	})
	class := map[string]string{}
	for i, r := range reasons {
		class[r] = seriesClasses[min(i, len(seriesClasses)-1)]
		c.Legend = append(c.Legend, legendEntry{Name: r, Class: class[r], Total: totals[r]})
	}
	for _, m := range perHour {
		var sum int64
		for _, v := range m {
			sum += v
		}
		c.Max = max(c.Max, sum)
	}
	if c.Max == 0 {
		return c
	}
	w := chartW / hours
	for i, m := range perHour {
		y := chartH
		label := since.Add(time.Duration(i) * time.Hour).UTC().Format("01-02 15:00")
		for _, r := range reasons {
			v := m[r]
			if v == 0 {
				continue
			}
			h := max(int(int64(chartH-20)*v/c.Max), 1)
			y -= h
			c.Bars = append(c.Bars, bar{X: i * w, Y: y, W: max(w-2, 1), H: h, Class: class[r],
				Title: fmt.Sprintf("%s: %s %s", label, strconv.FormatInt(v, 10), r)})
		}
	}
	return c
}
