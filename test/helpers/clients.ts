/** Typed RPC clients for the running app over Connect, gRPC and gRPC-Web. */
import type { DescService } from "@bufbuild/protobuf";
import { createClient, type Client, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";

export type Protocol = "connect" | "grpc" | "grpc-web";

/** A transport of the given protocol to the app. */
export function transportFor(baseUrl: string, protocol: Protocol): Transport {
  switch (protocol) {
    case "connect":
      return createConnectTransport({ baseUrl, httpVersion: "1.1" });
    case "grpc":
      return createGrpcTransport({ baseUrl });
    case "grpc-web":
      return createGrpcWebTransport({ baseUrl, httpVersion: "1.1" });
  }
}

/** A typed client of `service` over `protocol`. */
export function clientFor<T extends DescService>(service: T, baseUrl: string, protocol: Protocol): Client<T> {
  return createClient(service, transportFor(baseUrl, protocol));
}
