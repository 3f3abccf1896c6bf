/* global document */
// The chart's tooltip: follows the pointer, or the arrow keys once the chart has focus, with a
// guide line on the day shown. What it shows is the chart's business (`content`).

/**
 * container: the chart's box (the tooltip is placed in it); svg: the chart, `width` user units
 * wide; guide: its vertical line; days: how many; xAt(i): a day's centre; dayAt(x): the day under
 * an x in user units; content(i): the nodes to show for day i.
 */
export function attachTooltip({ container, svg, guide, width, days, xAt, dayAt, content }) {
  const tooltip = document.createElement('div');
  tooltip.className = 'tooltip';
  tooltip.hidden = true;
  tooltip.setAttribute('aria-live', 'polite');
  container.append(tooltip);

  let selected = -1;
  function show(i) {
    if (i < 0 || i >= days) return hide();
    selected = i;
    guide.setAttribute('x1', xAt(i));
    guide.setAttribute('x2', xAt(i));
    guide.setAttribute('visibility', 'visible');
    tooltip.replaceChildren(...content(i));
    tooltip.hidden = false;
    const scale = container.clientWidth / width || 1;
    const left = xAt(i) * scale;
    const flip = left > container.clientWidth * 0.6;
    tooltip.style.left = flip ? 'auto' : `${left + 12}px`;
    tooltip.style.right = flip ? `${container.clientWidth - left + 12}px` : 'auto';
  }
  function hide() {
    selected = -1;
    guide.setAttribute('visibility', 'hidden');
    tooltip.hidden = true;
  }
  const indexAt = (event) => {
    const box = svg.getBoundingClientRect();
    return dayAt(((event.clientX - box.left) / box.width) * width);
  };
  svg.addEventListener('pointermove', (event) => show(indexAt(event)));
  svg.addEventListener('pointerleave', hide);
  svg.addEventListener('blur', hide);
  svg.addEventListener('focus', () => show(days - 1));
  svg.addEventListener('keydown', (event) => {
    const moves = { ArrowLeft: -1, ArrowRight: 1 };
    if (event.key in moves) show(Math.min(days - 1, Math.max(0, (selected < 0 ? days : selected) + moves[event.key])));
    else if (event.key === 'Home') show(0);
    else if (event.key === 'End') show(days - 1);
    else return;
    event.preventDefault();
  });
}
