import { extractDocument } from './index';
import { htmlToBlocks } from './html';
import { corpus } from './testing/corpus';

describe('HTML extraction (cheerio)', () => {
  it('drops Sphinx navigation, sidebar, search box, footer and permalink marks; keeps headings, text and code', async () => {
    const doc = await extractDocument(corpus('html/debian-policy-ch-files.html'), 'text/html; charset=utf-8');
    const all = doc.blocks.map((b) => b.text).join('\n');
    for (const chrome of [
      'Table of Contents',
      'Previous topic',
      'Next topic',
      'Quick search',
      'Show Source',
      'Created using Sphinx',
      'Navigation',
      'previous |',
      '\u00b6',
    ]) {
      expect(all).not.toContain(chrome);
    }
    expect(doc.title).toBe('10. Files \u2014 Debian Policy Manual v4.6.2.0');
    expect(doc.blocks[0]).toEqual({ kind: 'heading', text: '10. Files', page: null, level: 1 });
    expect(doc.blocks[1]).toEqual({ kind: 'heading', text: '10.1. Binaries', page: null, level: 2 });
    expect(doc.blocks[2].text).toMatch(/^Two different packages must not install programs with different functionality but with the same filenames\./);
    // <pre> keeps its line breaks
    expect(doc.blocks.some((b) => b.text === 'CC = gcc\nCFLAGS = -O2 -g -Wall # sane warning options vary between programs\nLDFLAGS = # none')).toBe(true);
    expect(doc.blocks.filter((b) => b.kind === 'heading').map((b) => b.text)).toContain('10.7.5. User configuration files (\u201cdotfiles\u201d)');
  });

  it('keeps list items of the OSHA heat app pages, in English and Spanish', async () => {
    const en = await extractDocument(corpus('html/osha_heat_app_First_Aid.html'), 'text/html');
    expect(en.title).toBe('First Aid');
    const stroke = en.blocks.findIndex((b) => b.kind === 'heading' && b.text === 'Heat Stroke');
    expect(en.blocks[stroke].level).toBe(2);
    expect(en.blocks.slice(stroke + 1, stroke + 4).map((b) => [b.kind, b.text])).toEqual([
      ['paragraph', 'Review the signs and symptoms of heat stroke'],
      ['list', 'THIS IS A MEDICAL EMERGENCY: Call 911.'],
      ['list', 'Stay with the worker until help arrives.'],
    ]);
    const es = await extractDocument(corpus('html/osha_heat_app_More_Details_es.html'), 'text/html');
    expect(es.title).toBe('M\u00e1s Detalles');
    expect(es.blocks.some((b) => b.kind === 'list' && b.text.startsWith('Qu\u00e9 pasos seguir si un trabajador tiene s\u00edntomas'))).toBe(true);
  });

  it('drops <nav>, site header/footer, aside and forms but keeps an article header and tables', () => {
    const { blocks, title } = htmlToBlocks(
      `<html><head><title>T</title><script>var x = 1;</script></head><body>
        <header><a href="/">Home</a> <a href="/about">About us</a></header>
        <nav role="navigation"><ul><li>Menu item</li></ul></nav>
        <main><article><header><h1>Lockout procedure</h1></header>
          <p>Workers <b>must</b> apply<br>a lock.</p>
          <table><thead><tr><th>Step</th><th>Action</th></tr></thead><tbody><tr><td>1</td><td>Notify</td></tr><tr><td>2</td><td>Shut down</td></tr></tbody></table>
          <aside class="footnote"><p>Footnote kept.</p></aside>
        </article></main>
        <aside>Related links</aside><form><label>Search</label></form>
        <footer>Copyright 2024</footer></body></html>`,
      { dropChrome: true },
    );
    expect(title).toBe('T');
    expect(blocks).toEqual([
      { kind: 'heading', text: 'Lockout procedure', page: null, level: 1 },
      { kind: 'paragraph', text: 'Workers must apply\na lock.', page: null },
      { kind: 'table', text: 'Step | Action\n1 | Notify\n2 | Shut down', page: null, tableHeader: 'Step | Action' },
      { kind: 'paragraph', text: 'Footnote kept.', page: null },
    ]);
  });
});
