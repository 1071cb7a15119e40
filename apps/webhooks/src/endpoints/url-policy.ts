import { AppError, charLengthWithin, WEBHOOK_URL_MAX_CHARS } from '@kb/common';
import ipaddr from 'ipaddr.js';
import { lookup as dnsLookup, LookupAddress } from 'node:dns';
import { isIP } from 'node:net';

/** Where webhooks may go: the operator's switches (README configuration table). */
export interface DestinationPolicy {
  /** WEBHOOK_ALLOW_PRIVATE: loopback, link-local, private and other non-public addresses allowed. */
  allowPrivate: boolean;
  /** WEBHOOK_ALLOW_HTTP: plain `http://` URLs allowed (otherwise `https://` only). */
  allowHttp: boolean;
}

/**
 * Whether an IP address is a public unicast address. Anything ipaddr.js classifies otherwise is
 * refused: loopback, link-local (incl. 169.254.169.254, the cloud metadata address), private
 * (RFC 1918), unique-local (fc00::/7), carrier-grade NAT, unspecified, multicast, broadcast,
 * reserved, and IPv6 forms embedding IPv4 (IPv4-mapped addresses are judged by their IPv4 part).
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  return ipaddr.process(address).range() === 'unicast';
}

/** Why a delivery or an endpoint URL was refused by the destination rules. */
export class DestinationRefusedError extends Error {
  readonly code = 'DESTINATION_REFUSED';
}

/**
 * A `lookup` for node:http(s) that resolves every address of a host name and refuses the
 * connection when any of them is not public (unless `allowPrivate`). The check runs on the
 * addresses the socket actually connects to, so a DNS answer that changes after the endpoint was
 * created (DNS rebinding) cannot reach a private address.
 */
export function guardedLookup(allowPrivate: boolean) {
  return (
    hostname: string,
    options: { all?: boolean; family?: number | string },
    callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
  ): void => {
    dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses) => {
      if (err) return callback(err, '');
      if (addresses.length === 0) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '');
      const refused = addresses.find((a) => !isPublicAddress(a.address));
      if (!allowPrivate && refused) {
        return callback(
          new DestinationRefusedError(`${hostname} resolves to ${refused.address}, a non-public address; set WEBHOOK_ALLOW_PRIVATE=true to allow it`),
          '',
        );
      }
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0].address, addresses[0].family);
    });
  };
}

/** Host name of a URL without the brackets of an IPv6 literal. */
function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

/**
 * Checks an endpoint URL against the rules at creation and update: a valid absolute `https://`
 * URL (or `http://` when allowed), at most {@link WEBHOOK_URL_MAX_CHARS} characters, without user
 * information, whose host is public (an IP literal is checked directly, a name by resolving it).
 * @returns the normalised URL (WHATWG serialisation).
 * @throws AppError VALIDATION_ERROR naming the rule broken.
 */
export async function checkEndpointUrl(raw: string, policy: DestinationPolicy): Promise<string> {
  if (typeof raw !== 'string' || !charLengthWithin(raw, 1, WEBHOOK_URL_MAX_CHARS))
    throw AppError.validation(`url must be 1 to ${WEBHOOK_URL_MAX_CHARS} characters.`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw AppError.validation('url must be an absolute URL such as https://example.com/hooks.');
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && policy.allowHttp)) {
    throw AppError.validation(policy.allowHttp ? 'url must use https or http.' : 'url must use https (plain http is not allowed by this server).');
  }
  if (url.username || url.password) throw AppError.validation('url must not contain a user name or password.');
  const host = hostOf(url);
  if (!policy.allowPrivate) {
    if (isIP(host)) {
      if (!isPublicAddress(host))
        throw AppError.validation(`url points to ${host}, a loopback, link-local or private address, which this server does not deliver to.`);
    } else {
      const addresses = await new Promise<LookupAddress[]>((resolve) => dnsLookup(host, { all: true, verbatim: true }, (err, a) => resolve(err ? [] : a)));
      if (addresses.length === 0) throw AppError.validation(`url's host ${host} could not be resolved.`);
      const bad = addresses.find((a) => !isPublicAddress(a.address));
      if (bad)
        throw AppError.validation(
          `url's host ${host} resolves to ${bad.address}, a loopback, link-local or private address, which this server does not deliver to.`,
        );
    }
  }
  return url.toString();
}
