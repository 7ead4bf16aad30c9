/** UpstreamPool: connections opened ahead of need (client.initial_pool_size) and handed to undici's pool. */
import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { after, afterEach, before, test } from "node:test";
import { request } from "undici";
import { UpstreamPool } from "../../src/providers/http/upstream-pool.js";

let server: Server;
let origin: string;
/** Every connection the server has accepted, open or not. */
const accepted: Socket[] = [];
const pools: UpstreamPool[] = [];

/** Resolves once `predicate` holds, checking on every turn of the event loop. */
async function until(predicate: () => boolean, what: string): Promise<void> {
  for (let turn = 0; turn < 10_000; turn++) {
    if (predicate()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  assert.fail(`never happened: ${what}`);
}

const openConnections = () => accepted.filter((socket) => !socket.destroyed).length;

function newPool(): UpstreamPool {
  const pool = new UpstreamPool();
  pools.push(pool);
  return pool;
}

async function get(pool: UpstreamPool): Promise<string> {
  const res = await request(`${origin}/ping`, { dispatcher: pool.agent });
  return res.body.text();
}

before(async () => {
  server = createServer((_req, res) => res.end("pong"));
  server.on("connection", (socket: Socket) => accepted.push(socket));
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
  for (const socket of accepted.splice(0)) socket.destroy();
});

after(() => {
  server.close();
});

test("opens the asked number of connections to the origin", async () => {
  const failures = await newPool().preconnect([`${origin}/v1`], 3);
  assert.deepEqual(failures, []);
  await until(() => accepted.length === 3, "3 connections accepted");
});

test("opens one set of connections per origin however many URLs share it", async () => {
  await newPool().preconnect([`${origin}/v1`, `${origin}/openai`], 2);
  await until(() => accepted.length === 2, "2 connections accepted");
});

test("serves the first request over a pre-opened connection", async () => {
  const pool = newPool();
  await pool.preconnect([origin], 2);
  await until(() => accepted.length === 2, "2 connections accepted");
  assert.equal(await get(pool), "pong");
  assert.equal(accepted.length, 2, "no new connection was dialled");
  assert.equal(pool.idleConnections, 1);
});

test("dials a new connection when the upstream closed the parked ones", async () => {
  const pool = newPool();
  await pool.preconnect([origin], 2);
  await until(() => accepted.length === 2, "2 connections accepted");
  for (const socket of accepted) socket.destroy();
  await until(() => pool.idleConnections === 0, "the pool dropped the closed connections");
  assert.equal(await get(pool), "pong");
  assert.equal(accepted.length, 3);
});

test("drops a parked connection on which the upstream sent anything", async () => {
  const pool = newPool();
  await pool.preconnect([origin], 1);
  await until(() => accepted.length === 1, "1 connection accepted");
  accepted[0]?.write("HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n");
  await until(() => pool.idleConnections === 0, "the pool dropped the spoiled connection");
  assert.equal(await get(pool), "pong");
});

test("reports the connections it could not open, without throwing", async () => {
  const closed = createServer();
  closed.listen(0, "127.0.0.1");
  await once(closed, "listening");
  const deadOrigin = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
  closed.close();
  await once(closed, "close");
  const failures = await newPool().preconnect([deadOrigin], 2);
  assert.equal(failures.length, 2);
  assert.equal(failures[0]?.origin, deadOrigin);
});

test("reports a URL it cannot parse as a failure", async () => {
  const failures = await newPool().preconnect(["not a url"], 1);
  assert.equal(failures.length, 1);
  assert.equal(failures[0]?.origin, "not a url");
});

test("closes its parked connections when it closes", async () => {
  const pool = newPool();
  await pool.preconnect([origin], 2);
  await until(() => openConnections() === 2, "2 connections open");
  await pool.close();
  await until(() => accepted.every((socket) => socket.destroyed || socket.readableEnded), "the server saw both connections end");
});
