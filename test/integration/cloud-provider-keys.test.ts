/**
 * The cloud providers' key blocks at save time: a block missing what signing or token minting needs is
 * a 400 naming the field, through the API and the config file alike; secrets are redacted on reads and
 * kept when a read is written back (proved by a signed call still verifying afterwards).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { parseConfig } from "../../src/config/load-config.js";
import { inferenceOptionsFromFile } from "../../src/services/inference/config.js";
import { startMockBedrock, type MockBedrock } from "../fixtures/mock-bedrock.js";
import { startMockGoogle } from "../fixtures/mock-google.js";
import { testServiceAccount, withTokenUri } from "../fixtures/service-account.js";
import { api, startApp, type TestApp } from "../helpers/app.js";
import { sdk } from "../helpers/inference.js";

type Json = Record<string, any /* JSON of any shape */>;

const CREDS = { accessKey: "AKIAKEYS", secretKey: "keys-secret", sessionToken: "keys-token", region: "us-west-2" };
const BEDROCK_BLOCK = { access_key: CREDS.accessKey, secret_key: CREDS.secretKey, session_token: CREDS.sessionToken, region: CREDS.region };

const ACCOUNT = testServiceAccount("keys");

function vertexKey(overrides: Json): Json {
  return { id: "k", name: "k", vertex_key_config: { project_id: "p-1", region: "us-central1", auth_credentials: JSON.stringify(ACCOUNT.json), ...overrides } };
}

let app: TestApp;
let bedrock: MockBedrock;

before(async () => {
  bedrock = await startMockBedrock(CREDS);
  app = await startApp();
});

after(async () => {
  await app?.stop();
  await bedrock?.close();
});

/** Bad providers, each with the field its 400 must name (relative to the provider). */
function badProviders(): { why: string; name: string; provider: Json; field: string }[] {
  const bedrockKey = (block: Json) => ({ id: "k", name: "k", bedrock_key_config: block });
  const { region: _r, ...noRegion } = BEDROCK_BLOCK;
  const { access_key: _a, ...noAccess } = BEDROCK_BLOCK;
  const { secret_key: _s, ...noSecret } = BEDROCK_BLOCK;
  return [
    { why: "a bedrock key without a region", name: "bedrock", provider: { keys: [bedrockKey(noRegion)] }, field: "keys[0].bedrock_key_config.region" },
    { why: "a bedrock key without an access key", name: "bedrock", provider: { keys: [bedrockKey(noAccess)] }, field: "keys[0].bedrock_key_config.access_key" },
    { why: "a bedrock key without a secret key", name: "bedrock", provider: { keys: [bedrockKey(noSecret)] }, field: "keys[0].bedrock_key_config.secret_key" },
    { why: "a bedrock key with a region that is no region name", name: "bedrock", provider: { keys: [bedrockKey({ ...BEDROCK_BLOCK, region: "evil.example.com/x" })] }, field: "keys[0].bedrock_key_config.region" },
    { why: "a bedrock key without bedrock_key_config", name: "bedrock", provider: { keys: [{ id: "k", name: "k", value: "x" }] }, field: "keys[0].bedrock_key_config" },
    { why: "bedrock_key_config on another provider", name: "openai", provider: { keys: [{ id: "k", name: "k", value: "sk", bedrock_key_config: BEDROCK_BLOCK }] }, field: "keys[0].bedrock_key_config" },
    { why: "a vertex key without a project_id", name: "vertex", provider: { keys: [vertexKey({ project_id: "" })] }, field: "keys[0].vertex_key_config.project_id" },
    { why: "a vertex key without a region", name: "vertex", provider: { keys: [vertexKey({ region: undefined })] }, field: "keys[0].vertex_key_config.region" },
    { why: "a vertex key without auth_credentials", name: "vertex", provider: { keys: [vertexKey({ auth_credentials: undefined })] }, field: "keys[0].vertex_key_config.auth_credentials" },
    { why: "service-account credentials that are not JSON", name: "vertex", provider: { keys: [vertexKey({ auth_credentials: "{not json" })] }, field: "keys[0].vertex_key_config.auth_credentials" },
    ...(["client_email", "private_key", "token_uri"] as const).map((missing) => ({
      why: `a service account without ${missing}`,
      name: "vertex",
      provider: { keys: [vertexKey({ auth_credentials: JSON.stringify({ ...ACCOUNT.json, [missing]: undefined }) })] },
      field: `keys[0].vertex_key_config.auth_credentials.${missing}`,
    })),
    {
      why: "a service account whose private_key is not a PEM key",
      name: "vertex",
      provider: { keys: [vertexKey({ auth_credentials: JSON.stringify({ ...ACCOUNT.json, private_key: "-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n" }) })] },
      field: "keys[0].vertex_key_config.auth_credentials.private_key",
    },
    { why: "a bedrock key with a value it would never send", name: "bedrock", provider: { keys: [{ ...bedrockKey(BEDROCK_BLOCK), value: "sk-unused" }] }, field: "keys[0].value" },
    { why: "a vertex key with a value it would never send", name: "vertex", provider: { keys: [{ ...vertexKey({}), value: "sk-unused" }] }, field: "keys[0].value" },
    { why: "a vertex key without vertex_key_config", name: "vertex", provider: { keys: [{ id: "k", name: "k", value: "x" }] }, field: "keys[0].vertex_key_config" },
  ];
}

describe("cloud provider key blocks", () => {
  for (const bad of badProviders()) {
    test(`refuses ${bad.why} through the API, naming the field`, async () => {
      const res = await api(app, "POST", "/api/v1/providers", { name: bad.name, ...bad.provider });
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.ok(String(res.body.error.message).includes(bad.field), res.body.error.message);
    });

    test(`refuses ${bad.why} in the config file, naming the field`, () => {
      assert.throws(
        () => inferenceOptionsFromFile(parseConfig({ providers: { [bad.name]: bad.provider } }, {}).providers, []),
        (err: Error) => err.message.includes(bad.field),
      );
    });
  }

  test("redacts bedrock secrets on reads and keeps them when the read is written back", async () => {
    const created = await api(app, "POST", "/api/v1/providers", {
      name: "bedrock",
      keys: [{ id: "br", name: "br", models: ["amazon.nova-micro-v1:0"], bedrock_key_config: BEDROCK_BLOCK }],
      network_config: { base_url: bedrock.url },
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const read = (await api(app, "GET", "/api/v1/providers/bedrock")).body.provider as Json;
    const block = read["keys"][0]["bedrock_key_config"] as Json;
    assert.deepEqual(block, { access_key: CREDS.accessKey, secret_key: "<redacted>", region: CREDS.region, session_token: "<redacted>" });
    assert.ok(!JSON.stringify(read).includes(CREDS.secretKey));

    const put = await api(app, "PUT", "/api/v1/providers/bedrock", { keys: read["keys"], network_config: read["network_config"] });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    const vk = await api(app, "POST", "/api/governance/virtual-keys", {
      id: "vk-keys",
      name: "keys",
      value: "sk-gw-keys",
      provider_configs: [{ provider: "bedrock", allowed_models: ["*"], key_ids: ["*"], weight: 1 }],
    });
    assert.equal(vk.status, 200, JSON.stringify(vk.body));
    // The mock verifies the signature with the real secret: the kept secret is the one that signs.
    const answer = await sdk(app, "sk-gw-keys").chat.completions.create({ model: "bedrock/amazon.nova-micro-v1:0", messages: [{ role: "user", content: "still signed" }] });
    assert.equal(answer.choices[0]?.message.content, "echo: still signed");
  });

  test("redacts the service account on reads and keeps it when the read is written back", async () => {
    const google = await startMockGoogle({ apiKey: "unused", serviceAccount: { clientEmail: ACCOUNT.clientEmail, publicKey: ACCOUNT.publicKey } });
    try {
      const account = withTokenUri(ACCOUNT, google.tokenUri);
      const created = await api(app, "POST", "/api/v1/providers", {
        name: "vertex",
        keys: [{ id: "vx", name: "vx", models: ["gemini-2.5-flash"], vertex_key_config: { project_id: "p-1", region: "us-central1", auth_credentials: account.json } }],
        network_config: { base_url: google.url },
      });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      const read = (await api(app, "GET", "/api/v1/providers/vertex")).body.provider as Json;
      assert.deepEqual(read["keys"][0]["vertex_key_config"], { project_id: "p-1", region: "us-central1", auth_credentials: "<redacted>" });
      assert.ok(!JSON.stringify(read).includes("PRIVATE KEY"));
      const put = await api(app, "PUT", "/api/v1/providers/vertex", { keys: read["keys"] });
      assert.equal(put.status, 200, JSON.stringify(put.body));
      const vk = await api(app, "POST", "/api/governance/virtual-keys", {
        id: "vk-vertex",
        name: "vertex",
        value: "sk-gw-vertex-keys",
        provider_configs: [{ provider: "vertex", allowed_models: ["*"], key_ids: ["*"], weight: 1 }],
      });
      assert.equal(vk.status, 200, JSON.stringify(vk.body));
      // The token endpoint verifies the assertion with the account's key: the kept key is the one that signs.
      const answer = await sdk(app, "sk-gw-vertex-keys").chat.completions.create({ model: "vertex/gemini-2.5-flash", messages: [{ role: "user", content: "kept" }] });
      assert.equal(answer.choices[0]?.message.content, "echo: kept");
    } finally {
      await google.close();
    }
  });
});
