/** Images (PNG, JPEG, TIFF): OCR with tesseract; each TIFF frame is a page. */
import { access } from 'node:fs/promises';
import { checkPageLimit, ExtractionContext } from './context';
import { pageTextToBlocks } from './layout';
import { ocrImage } from './ocr';
import { ExtractedBlock, ExtractedDocument, ExtractionError } from './types';

/**
 * Extracts the text of an image by OCR. Blocks carry the frame number as page (1 for PNG/JPEG).
 * Throws `NO_TEXT` when OCR is disabled or recognises nothing, `OCR_UNAVAILABLE` when tesseract
 * is missing, `CORRUPT_FILE` when the image cannot be decoded, `TOO_LARGE` for too many frames.
 */
export async function extractImage(ctx: ExtractionContext, filePath: string): Promise<ExtractedDocument> {
  await access(filePath);
  if (!ctx.ocr) {
    throw new ExtractionError('NO_TEXT', 'The file is an image and OCR is turned off for this upload; enable OCR or upload a document with selectable text.');
  }
  // One tesseract run reads every frame: the frame count is known only when it ends.
  ctx.progress('ocr', 0, null);
  const pages = await ocrImage(ctx, filePath);
  ctx.progress('ocr', pages.length, pages.length);
  checkPageLimit(ctx, pages.length, 'page');
  const blocks: ExtractedBlock[] = [];
  pages.forEach((text, i) => blocks.push(...pageTextToBlocks(text, i + 1)));
  if (blocks.length === 0) {
    throw new ExtractionError('NO_TEXT', 'No text was recognised in the image; upload a sharper scan (300 dpi or more) or a document with selectable text.');
  }
  return { blocks, pageCount: pages.length, title: null };
}
