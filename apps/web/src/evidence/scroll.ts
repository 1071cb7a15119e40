/**
 * Brings an element (a highlight, a marked quote) to the middle of the box that scrolls it, and
 * only that box: `Element.scrollIntoView` would also scroll the page itself, moving the review queue
 * and the decision buttons out of sight. Without a scrolling ancestor the page scrolls as little as
 * it must (`block: 'nearest'`). Smooth unless the person prefers reduced motion.
 */
export function scrollIntoContainer(el: HTMLElement): void {
  const behavior: ScrollBehavior = window.matchMedia?.('(prefers-reduced-motion: reduce)').matches ? 'auto' : 'smooth';
  for (let box = el.parentElement; box; box = box.parentElement) {
    const { overflowY } = getComputedStyle(box);
    if ((overflowY === 'auto' || overflowY === 'scroll') && box.scrollHeight > box.clientHeight) {
      const target = el.getBoundingClientRect();
      const frame = box.getBoundingClientRect();
      const top = box.scrollTop + (target.top - frame.top) - (box.clientHeight - target.height) / 2;
      box.scrollTo({ top: Math.max(0, top), behavior });
      return;
    }
  }
  el.scrollIntoView({ block: 'nearest', inline: 'nearest', behavior });
}
