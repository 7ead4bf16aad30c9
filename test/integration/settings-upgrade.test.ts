/**
 * Settings changed through the API survive a release whose defaults differ: the seed of the settings
 * sections remembers what the file said, not the defaults that filled the rest.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { SettingRecord } from "../../src/store/index.js";
import { api, startApp, type TestApp } from "../helpers/app.js";

/** Makes the store look as if an earlier release, with other defaults, had seeded the client settings. */
async function seedAsAnEarlierRelease(app: TestApp): Promise<void> {
  const em = app.store.fork();
  await em.upsert(SettingRecord, { key: "seed:client_settings", value: "hash of an earlier release's defaults", updatedAt: new Date() });
}

async function restartWith(app: TestApp, options: Parameters<typeof startApp>[0] = {}): Promise<TestApp> {
  await app.stop({ keepData: true });
  return startApp({ ...app.restartOptions, ...options });
}

test("without a config file, a PATCH /config survives a release whose defaults differ", async () => {
  let app = await startApp();
  try {
    assert.equal((await api(app, "PATCH", "/config", { client: { prometheus_labels: ["team"] } })).status, 200);
    await seedAsAnEarlierRelease(app);
    app = await restartWith(app);
    assert.deepEqual((await api(app, "GET", "/config")).body.config.client.prometheus_labels, ["team"]);
  } finally {
    await app.stop();
  }
});
