/**
 * AWS Signature Version 4 for Bedrock calls, with @smithy/signature-v4 (the signer the AWS SDK uses),
 * one signer per key's credentials.
 */
import type { SignatureV4 } from "@smithy/signature-v4";
import type { BedrockKeyConfig } from "../types.js";

/** The service name Bedrock's runtime endpoints sign under. */
export const BEDROCK_SIGNING_NAME = "bedrock";

const signers = new WeakMap<BedrockKeyConfig, SignatureV4>();

/** The signer's packages, loaded with the first Bedrock call: a gateway without Bedrock keeps them out of its memory. */
let packages: Promise<[typeof import("@smithy/signature-v4"), typeof import("@aws-crypto/sha256-js")]> | null = null;

async function signerFor(config: BedrockKeyConfig): Promise<SignatureV4> {
  const known = signers.get(config);
  if (known !== undefined) return known;
  const [{ SignatureV4 }, { Sha256 }] = await (packages ??= Promise.all([import("@smithy/signature-v4"), import("@aws-crypto/sha256-js")]));
  let signer = signers.get(config);
  if (signer === undefined) {
    signer = new SignatureV4({
      service: BEDROCK_SIGNING_NAME,
      region: config.region,
      credentials: { accessKeyId: config.accessKey, secretAccessKey: config.secretKey, ...(config.sessionToken !== null ? { sessionToken: config.sessionToken } : {}) },
      sha256: Sha256,
    });
    signers.set(config, signer);
  }
  return signer;
}

/**
 * The headers a request to `url` with `body` must carry: the ones given, plus host, x-amz-date,
 * x-amz-security-token (temporary credentials) and authorization.
 */
export async function signedHeaders(config: BedrockKeyConfig, method: "GET" | "POST", url: string, headers: Record<string, string>, body: string): Promise<Record<string, string>> {
  const target = new URL(url);
  const signed = await (await signerFor(config)).sign({
    method,
    protocol: target.protocol,
    hostname: target.hostname,
    ...(target.port ? { port: Number(target.port) } : {}),
    path: target.pathname,
    query: Object.fromEntries(target.searchParams),
    headers: { ...headers, host: target.host },
    body,
  });
  // undici sets host itself from the URL; the signature covers the same value.
  const { host: _host, ...out } = signed.headers;
  return out;
}
