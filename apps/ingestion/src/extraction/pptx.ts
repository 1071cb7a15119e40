/**
 * PPTX: the package is opened with JSZip and each slide's XML read with cheerio (XML mode).
 * One page per slide in presentation order; the title placeholder becomes a heading, other text
 * frames paragraphs, tables table blocks, speaker notes a final paragraph.
 */
import * as cheerio from 'cheerio';
import type { Element } from 'domhandler';
import JSZip from 'jszip';
import { posix } from 'node:path';
import { checkAborted, checkPageLimit, ExtractionContext, raceAbort } from './context';
import { readOfficePackage } from './office';
import { DEFAULT_ZIP_LIMITS } from './zip-limits';
import { cleanCell, formatRow } from './table';
import { ExtractedBlock, ExtractedDocument, ExtractionError } from './types';

const CORRUPT = 'The PowerPoint file could not be read; it may be damaged. Open it in PowerPoint, save a new copy and upload that.';

/** Relationship id -> target path (resolved against the part's folder) of one .rels part. */
async function readRels(zip: JSZip, partPath: string): Promise<Map<string, string>> {
  const relsPath = posix.join(posix.dirname(partPath), '_rels', `${posix.basename(partPath)}.rels`);
  const xml = await zip.file(relsPath)?.async('string');
  const rels = new Map<string, string>();
  if (!xml) return rels;
  const $ = cheerio.load(xml, { xml: true });
  $('Relationship').each((_, el) => {
    const id = $(el).attr('Id');
    const target = $(el).attr('Target');
    if (id && target && $(el).attr('TargetMode') !== 'External') {
      rels.set(id, target.startsWith('/') ? target.slice(1) : posix.normalize(posix.join(posix.dirname(partPath), target)));
    }
  });
  return rels;
}

/** Slide part paths in presentation order. */
async function slidePaths(zip: JSZip): Promise<string[]> {
  const xml = await zip.file('ppt/presentation.xml')?.async('string');
  if (!xml) throw new ExtractionError('CORRUPT_FILE', CORRUPT);
  const rels = await readRels(zip, 'ppt/presentation.xml');
  const $ = cheerio.load(xml, { xml: true });
  const paths: string[] = [];
  $('p\\:sldIdLst > p\\:sldId').each((_, el) => {
    const target = rels.get($(el).attr('r:id') ?? '');
    if (target) paths.push(target);
  });
  return paths;
}

/** Text of one DrawingML paragraph (a:p): runs and fields joined, a:br as a line break. */
function paragraphText($: cheerio.CheerioAPI, p: Element): string {
  let out = '';
  $(p)
    .find('a\\:r > a\\:t, a\\:fld > a\\:t, a\\:br')
    .each((_, el) => {
      out += el.name === 'a:br' ? '\n' : $(el).text();
    });
  return out.replace(/[ \t\u00a0]+/g, ' ').trim();
}

/** Blocks of one slide XML document. */
export function slideToBlocks(xml: string, page: number): ExtractedBlock[] {
  const $ = cheerio.load(xml, { xml: true });
  const blocks: ExtractedBlock[] = [];
  $('p\\:sp, p\\:graphicFrame').each((_, shape) => {
    if (shape.name === 'p:graphicFrame') {
      const rows = $(shape)
        .find('a\\:tbl > a\\:tr')
        .toArray()
        .map((tr) =>
          $(tr)
            .children('a\\:tc')
            .toArray()
            .map((tc) =>
              cleanCell(
                $(tc)
                  .find('a\\:p')
                  .toArray()
                  .map((p) => paragraphText($, p))
                  .join(' '),
              ),
            ),
        );
      const lines = rows.map(formatRow).filter(Boolean);
      if (lines.length) blocks.push({ kind: 'table', text: lines.join('\n'), page, tableHeader: lines[0] });
      return;
    }
    const phType = $(shape).find('p\\:nvSpPr p\\:ph').attr('type') ?? '';
    if (phType === 'sldNum' || phType === 'dt' || phType === 'ftr') return;
    const paragraphs = $(shape)
      .find('p\\:txBody > a\\:p')
      .toArray()
      .map((p) => ({ text: paragraphText($, p), bullet: $(p).find('a\\:pPr > a\\:buChar, a\\:pPr > a\\:buAutoNum').length > 0 }))
      .filter((p) => p.text);
    if (paragraphs.length === 0) return;
    if (phType === 'title' || phType === 'ctrTitle') {
      blocks.push({
        kind: 'heading',
        text: paragraphs
          .map((p) => p.text)
          .join(' ')
          .replace(/\n/g, ' '),
        page,
        level: 1,
      });
      return;
    }
    const isBody = phType === 'body' || phType === '' || phType === 'obj' || phType === 'subTitle';
    for (const p of paragraphs)
      blocks.push({ kind: p.bullet || (isBody && paragraphs.length > 1 && phType !== 'subTitle') ? 'list' : 'paragraph', text: p.text, page });
  });
  return blocks;
}

/** Speaker notes of a slide (body placeholder of its notes part), or ''. */
async function notesText(zip: JSZip, slidePath: string): Promise<string> {
  const rels = await readRels(zip, slidePath);
  const notesPath = [...rels.values()].find((t) => /notesSlides\/notesSlide\d+\.xml$/.test(t));
  const xml = notesPath ? await zip.file(notesPath)?.async('string') : undefined;
  if (!xml) return '';
  const $ = cheerio.load(xml, { xml: true });
  const texts: string[] = [];
  $('p\\:sp').each((_, shape) => {
    if ($(shape).find('p\\:nvSpPr p\\:ph').attr('type') !== 'body') return;
    $(shape)
      .find('p\\:txBody > a\\:p')
      .each((__, p) => {
        const t = paragraphText($, p);
        if (t) texts.push(t);
      });
  });
  return texts.join('\n');
}

/**
 * Extracts a PPTX presentation, one page per slide. Title: the package's title property, else the
 * first slide title. Throws `ENCRYPTED`, `UNSUPPORTED_TYPE` (legacy .ppt), `CORRUPT_FILE`,
 * `TOO_LARGE` (more slides than `maxPages`), `NO_TEXT`.
 */
export async function extractPptx(ctx: ExtractionContext, filePath: string): Promise<ExtractedDocument> {
  const buffer = await readOfficePackage(filePath, 'PowerPoint file', 'pptx', { ...DEFAULT_ZIP_LIMITS, maxUncompressedBytes: ctx.maxUnzippedBytes });
  let zip: JSZip;
  try {
    zip = await raceAbort(ctx, JSZip.loadAsync(buffer));
  } catch (e) {
    if (ctx.signal.aborted) throw e;
    throw new ExtractionError('CORRUPT_FILE', CORRUPT);
  }
  const slides = await slidePaths(zip);
  checkPageLimit(ctx, slides.length, 'slide');
  const blocks: ExtractedBlock[] = [];
  for (let i = 0; i < slides.length; i++) {
    checkAborted(ctx);
    ctx.progress('extracting', i, slides.length);
    const xml = await zip.file(slides[i])?.async('string');
    if (!xml) throw new ExtractionError('CORRUPT_FILE', CORRUPT);
    blocks.push(...slideToBlocks(xml, i + 1));
    const notes = await notesText(zip, slides[i]);
    if (notes) blocks.push({ kind: 'paragraph', text: `Speaker notes: ${notes}`, page: i + 1 });
  }
  ctx.progress('extracting', slides.length, slides.length);
  if (blocks.length === 0) {
    throw new ExtractionError('NO_TEXT', 'The presentation contains no text; upload a file with text on its slides.');
  }
  return { blocks, pageCount: slides.length, title: (await coreTitle(zip)) ?? blocks.find((b) => b.kind === 'heading')?.text ?? null };
}

async function coreTitle(zip: JSZip): Promise<string | null> {
  const xml = await zip.file('docProps/core.xml')?.async('string');
  if (!xml) return null;
  const $ = cheerio.load(xml, { xml: true });
  const t = $('dc\\:title').first().text().trim();
  return t || null;
}
