import { ErrorCode } from '@kb/common';
import { DataSource } from 'typeorm';
import { createTestDatabase } from '../../../../test/medium/database';
import { openGatewayDatabase } from '../database/database';
import { AccountsRepository } from './accounts.repository';
import { AccountsService, hashApiKey } from './accounts.service';

// Organizations and API keys on a real PostgreSQL: what kbctl does and what the gateway's key
// lookup answers, with and without its cache.

describe('AccountsService on PostgreSQL', () => {
  let db: DataSource;
  let cli: AccountsService;
  let gateway: AccountsService;

  beforeAll(async () => {
    db = await openGatewayDatabase(await createTestDatabase('accounts'));
    cli = new AccountsService(new AccountsRepository(db));
    gateway = new AccountsService(new AccountsRepository(db), 60_000);
  });
  afterAll(async () => {
    await db?.destroy();
  });

  it('resolves a key to its organization and limits, stores only its hash, and forgets it once revoked', async () => {
    const org = await cli.createOrganization({ name: '  Acme  ' });
    expect(org.name).toBe('Acme');
    await cli.setQuotas(org.id, { requests: 1000, tokens: null });
    const { key, secret } = await cli.createApiKey({ orgId: org.id, name: 'ci', rateLimitPerMinute: 42 });
    expect(secret).toMatch(/^kb_/);
    const [stored] = await db.query(`SELECT key_hash FROM api_keys WHERE id = $1`, [key.id]);
    expect(stored.key_hash).toBe(hashApiKey(secret));
    expect(JSON.stringify(await db.query(`SELECT * FROM api_keys`))).not.toContain(secret);

    expect(await gateway.authenticate(secret)).toEqual({
      keyId: key.id,
      keyName: 'ci',
      orgId: org.id,
      orgName: 'Acme',
      rateLimitPerMinute: 42,
      monthlyRequestQuota: 1000,
      monthlyTokenQuota: null,
    });
    expect(await gateway.authenticate(`${secret}x`)).toBeNull();
    expect(await gateway.authenticate('not-a-key')).toBeNull();

    await cli.revokeApiKey(key.id);
    expect(await cli.authenticate(secret)).toBeNull();
    // The gateway's cache serves the key until the revocation is announced (invalidate).
    expect((await gateway.authenticate(secret))?.keyId).toBe(key.id);
    gateway.invalidate({ keyId: key.id });
    expect(await gateway.authenticate(secret)).toBeNull();
  });

  it("shows quota changes after the organization's entries are invalidated", async () => {
    const org = await cli.createOrganization({ name: 'Quota Org' });
    const { secret } = await cli.createApiKey({ orgId: org.id });
    expect((await gateway.authenticate(secret))?.monthlyTokenQuota).toBeNull();
    await cli.setQuotas(org.id, { tokens: 500 });
    gateway.invalidate({ orgId: org.id });
    expect(await gateway.authenticate(secret)).toMatchObject({ monthlyTokenQuota: 500, rateLimitPerMinute: 100 });
  });

  it('lists organizations oldest first with their active keys, and keys newest first', async () => {
    const org = await cli.createOrganization({ name: 'Listed Org', safetyAssistantEnabled: true });
    const first = await cli.createApiKey({ orgId: org.id, name: 'one' });
    await cli.createApiKey({ orgId: org.id, name: 'two' });
    await cli.revokeApiKey(first.key.id);
    const listed = (await cli.listOrganizations()).find((o) => o.organization.id === org.id)!;
    expect([listed.organization.safetyAssistantEnabled, listed.activeKeys]).toEqual([true, 1]);
    const all = await cli.listOrganizations();
    expect(all.map((o) => o.organization.createdAt.getTime())).toEqual([...all.map((o) => o.organization.createdAt.getTime())].sort((a, b) => a - b));
    expect((await cli.listApiKeys(org.id)).map((k) => [k.name, k.revokedAt === null])).toEqual([
      ['two', true],
      ['one', false],
    ]);
  });

  it('refuses bad input and unknown organizations or keys', async () => {
    await expect(cli.createOrganization({ name: ' ' })).rejects.toMatchObject({ code: ErrorCode.VALIDATION_ERROR });
    await expect(cli.createApiKey({ orgId: 'no-such-org' })).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
    const org = await cli.createOrganization({ name: 'Strict Org' });
    await expect(cli.createApiKey({ orgId: org.id, rateLimitPerMinute: 0 })).rejects.toMatchObject({ code: ErrorCode.VALIDATION_ERROR });
    await expect(cli.setQuotas(org.id, { requests: -1 })).rejects.toMatchObject({ code: ErrorCode.VALIDATION_ERROR });
    await expect(cli.revokeApiKey('00000000-0000-4000-8000-000000000000')).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
  });
});
