// A small SVG line chart of Instance.history: the longest and the mean commit latency, and the
// longest event-loop stall (processing pause), per 5-second interval. Drawn by hand: three
// polylines and an axis do not need a charting library.
const NS = 'http://www.w3.org/2000/svg';
const WIDTH = 560;
const HEIGHT = 150;
const PAD = { left: 42, right: 8, top: 8, bottom: 20 };

const SERIES = [
  { name: 'commit latency, longest', className: 'commit-max', color: 'var(--committed)', read: (i) => i.commitLatencyMaxMs },
  { name: 'commit latency, mean', className: 'commit-avg', color: 'var(--committed)', read: (i) => i.commitLatencyAvgMs },
  { name: 'processing pause (longest event-loop stall)', className: 'pause', color: 'var(--uncommitted)', read: (i) => i.pauseMaxMs },
];

function element(name, attributes = {}, text) {
  const node = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attributes)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

/** A round top for the y axis: 1, 2 or 5 times a power of ten. */
function niceTop(max) {
  const m = Math.max(max, 1);
  const power = 10 ** Math.floor(Math.log10(m));
  return [1, 2, 5, 10].map((f) => f * power).find((v) => v >= m);
}

export function renderChart(container, intervals, windowMs) {
  const now = intervals.length === 0 ? Date.now() : Date.parse(intervals.at(-1).start) + intervals.at(-1).durationMs;
  const from = now - windowMs;
  let max = 0;
  for (const interval of intervals) for (const s of SERIES) max = Math.max(max, s.read(interval) ?? 0);
  const top = niceTop(max);
  const x = (t) => PAD.left + ((t - from) / windowMs) * (WIDTH - PAD.left - PAD.right);
  const y = (v) => HEIGHT - PAD.bottom - (v / top) * (HEIGHT - PAD.top - PAD.bottom);

  const svg = element('svg', { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, class: 'chart', role: 'img', 'aria-label': 'commit latency and processing pause per interval' });
  for (const v of [0, top / 2, top]) {
    svg.append(element('line', { class: 'axis', x1: PAD.left, x2: WIDTH - PAD.right, y1: y(v), y2: y(v) }));
    svg.append(element('text', { x: PAD.left - 4, y: y(v) + 3, 'text-anchor': 'end' }, `${v} ms`));
  }
  for (let minutes = Math.floor(windowMs / 60_000); minutes >= 0; minutes--) {
    svg.append(element('text', { x: x(now - minutes * 60_000), y: HEIGHT - 5, 'text-anchor': 'middle' }, minutes === 0 ? 'now' : `-${minutes} min`));
  }
  for (const s of SERIES) {
    const points = intervals
      .filter((i) => s.read(i) != null && Date.parse(i.start) >= from)
      .map((i) => `${x(Date.parse(i.start) + i.durationMs / 2).toFixed(1)},${y(s.read(i)).toFixed(1)}`);
    if (points.length > 0) svg.append(element('polyline', { class: s.className, points: points.join(' ') }));
  }
  const legend = document.createElement('div');
  legend.className = 'chart-legend';
  for (const s of SERIES) {
    const item = document.createElement('span');
    const swatch = document.createElement('i');
    swatch.style.background = s.color;
    item.append(swatch, s.name);
    legend.append(item);
  }
  container.replaceChildren(svg, legend);
}
