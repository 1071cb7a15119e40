import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * Encrypts and decrypts endpoint secrets at rest with AES-256-GCM (NIST SP 800-38D). The 256-bit
 * key is SHA-256 of the server key (WEBHOOK_SECRET_KEY, at least 32 characters of high-entropy
 * text such as `openssl rand -hex 32`); each secret gets a fresh 96-bit IV. Stored form:
 * `v1.<iv base64>.<tag base64>.<ciphertext base64>`. A database dump alone does not reveal the
 * secrets; rotating WEBHOOK_SECRET_KEY makes existing ones undecryptable (their endpoints must be
 * re-created). Also seals the gateway's stored idempotent answer of `POST /api/v2/webhooks`,
 * which holds a secret in clear (apps/gateway/src/common/idempotency.ts).
 */
export class SecretBox {
  private readonly key: Buffer;

  constructor(serverKey: string) {
    if (serverKey.length < 32) throw new Error('WEBHOOK_SECRET_KEY must be at least 32 characters');
    this.key = createHash('sha256').update(serverKey, 'utf8').digest();
  }

  seal(plaintext: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64'), cipher.getAuthTag().toString('base64'), data.toString('base64')].join('.');
  }

  /** @throws Error when the value was sealed under another key or altered. */
  open(sealed: string): string {
    const [version, iv, tag, data] = sealed.split('.');
    if (version !== 'v1' || !iv || !tag || data === undefined) throw new Error('unknown sealed secret format');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64'));
    decipher.setAuthTag(Buffer.from(tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64')), decipher.final()]).toString('utf8');
  }
}
