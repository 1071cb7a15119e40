/**
 * DOCX with mammoth: the document is converted to HTML (Word heading styles become h1-h6, lists,
 * tables), which is then walked like any HTML. Custom heading styles (a company's "Section" style
 * based on Heading 1, or any style with an outline level) are mapped to headings too. Images are
 * skipped.
 */
import * as cheerio from 'cheerio';
import JSZip from 'jszip';
import mammoth from 'mammoth';
import { ExtractionContext, raceAbort } from './context';
import { htmlToBlocks } from './html';
import { readOfficePackage } from './office';
import { DEFAULT_ZIP_LIMITS } from './zip-limits';
import { ExtractedDocument, ExtractionError } from './types';

const CORRUPT = 'The Word document could not be read; it may be damaged. Open it in Word, save a new copy and upload that.';

interface StyleInfo {
  basedOn: string | null;
  level: number | null;
}

/**
 * Heading level (1..6) of each paragraph style of `styles.xml`: from its outline level, from a
 * built-in "heading N"/"Title" name, or inherited through `basedOn`. Styles that are not headings
 * are left out.
 */
export function headingStyleLevels(stylesXml: string): Map<string, number> {
  const $ = cheerio.load(stylesXml, { xml: true });
  const styles = new Map<string, StyleInfo>();
  $('w\\:style[w\\:type="paragraph"]').each((_, el) => {
    const id = $(el).attr('w:styleId');
    if (!id) return;
    const name = ($(el).children('w\\:name').attr('w:val') ?? '').toLowerCase();
    const outline = $(el).find('w\\:pPr > w\\:outlineLvl').attr('w:val');
    let level: number | null = null;
    if (outline !== undefined && Number(outline) >= 0 && Number(outline) <= 5) level = Number(outline) + 1;
    else if (/^heading [1-6]$/.test(name)) level = Number(name.slice(-1));
    else if (name === 'title') level = 1;
    styles.set(id, { basedOn: $(el).children('w\\:basedOn').attr('w:val') ?? null, level });
  });
  const levels = new Map<string, number>();
  for (const id of styles.keys()) {
    let cur: string | null = id;
    for (let depth = 0; cur && depth < 20; depth++) {
      const info = styles.get(cur);
      if (!info) break;
      if (info.level !== null) {
        levels.set(id, info.level);
        break;
      }
      cur = info.basedOn;
    }
  }
  return levels;
}

/** Mammoth style-map lines that turn heading-like paragraph styles (by style id) into h1..h6. */
function styleMapFor(levels: Map<string, number>): string[] {
  return [...levels]
    .filter(([id]) => /^[A-Za-z][A-Za-z0-9_-]*$/.test(id))
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([id, level]) => `p.${id} => h${level}:fresh`);
}

async function readParts(buffer: Buffer): Promise<{ styles: string | null; title: string | null }> {
  const zip = await JSZip.loadAsync(buffer);
  const styles = (await zip.file('word/styles.xml')?.async('string')) ?? null;
  const core = await zip.file('docProps/core.xml')?.async('string');
  const title = core ? cheerio.load(core, { xml: true })('dc\\:title').first().text().trim() : '';
  return { styles, title: title || null };
}

/**
 * Extracts a DOCX file; blocks have `page: null` (Word pages depend on rendering) and
 * `pageCount` is null. Title: the first heading, else the document's title property, else null.
 * Throws `ENCRYPTED`, `UNSUPPORTED_TYPE` (legacy .doc), `CORRUPT_FILE`, `NO_TEXT` (no text at all).
 */
export async function extractDocx(ctx: ExtractionContext, filePath: string): Promise<ExtractedDocument> {
  const buffer = await readOfficePackage(filePath, 'Word document', 'docx', { ...DEFAULT_ZIP_LIMITS, maxUncompressedBytes: ctx.maxUnzippedBytes });
  let html: string;
  let propertyTitle: string | null;
  try {
    const parts = await raceAbort(ctx, readParts(buffer));
    propertyTitle = parts.title;
    const styleMap = parts.styles ? styleMapFor(headingStyleLevels(parts.styles)) : [];
    const result = await raceAbort(ctx, mammoth.convertToHtml({ buffer }, { styleMap, convertImage: mammoth.images.imgElement(async () => ({ src: '' })) }));
    html = result.value;
  } catch (e) {
    if (e instanceof ExtractionError || ctx.signal.aborted) throw e;
    throw new ExtractionError('CORRUPT_FILE', CORRUPT);
  }
  const { blocks } = htmlToBlocks(html, { dropChrome: false });
  if (blocks.length === 0) throw new ExtractionError('NO_TEXT', 'The Word document contains no text; upload a document with content.');
  const title = blocks.find((b) => b.kind === 'heading')?.text ?? propertyTitle;
  return { blocks, pageCount: null, title };
}
