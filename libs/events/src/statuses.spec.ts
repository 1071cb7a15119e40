import { AppError, ErrorCode } from '@kb/common';
import { checkV1, documentsV1 } from '@kb/proto';
import { batchQuestionStatus, batchStatus, deliveryStatus, documentStatus, requirementStatus, runStatus, subRequirementStatus } from './statuses';

describe('status codecs (one list per status, proto enums derived by name)', () => {
  it('round-trips every status of every resource through its proto enum', () => {
    for (const codec of [documentStatus, runStatus, requirementStatus, subRequirementStatus, batchStatus, batchQuestionStatus, deliveryStatus]) {
      const numbers = codec.values.map((v) => codec.toProto(v as never));
      expect(new Set(numbers).size).toBe(codec.values.length);
      expect(numbers).not.toContain(0);
      expect(numbers.map((n) => codec.fromProto(n as never))).toEqual([...codec.values]);
    }
  });

  it('names the enum members the API strings map to', () => {
    expect(documentStatus.toProto('awaiting_upload')).toBe(documentsV1.DocumentStatus.DOCUMENT_STATUS_AWAITING_UPLOAD);
    expect(subRequirementStatus.toProto('not-comply')).toBe(checkV1.SubRequirementStatus.SUB_REQUIREMENT_STATUS_NOT_COMPLY);
  });

  it('refuses UNSPECIFIED or an unknown number with VALIDATION_ERROR listing the allowed values', () => {
    for (const n of [0, 99]) {
      let error: unknown;
      try {
        documentStatus.fromProto(n);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(AppError);
      expect((error as AppError).code).toBe(ErrorCode.VALIDATION_ERROR);
      expect((error as AppError).message).toBe('status must be one of awaiting_upload, processing, ready, completed, failed.');
    }
  });
});
