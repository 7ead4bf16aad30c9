/** gw.admin.v1.ClusterService: the gateway nodes sharing this node's database. */
import type { ServiceImpl } from "@connectrpc/connect";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { NodeRegistry } from "../cluster/node-registry.js";
import { ClusterService } from "../../gen/gw/admin/v1/cluster_pb.js";

/** Creates the service implementation. */
export function createClusterService(deps: { cluster: NodeRegistry }): ServiceImpl<typeof ClusterService> {
  return {
    async listNodes() {
      const nodes = await deps.cluster.list();
      return {
        nodes: nodes.map((node) => ({
          id: node.id,
          address: node.address,
          version: node.version,
          startedAt: timestampFromDate(node.startedAt),
          heartbeatAt: timestampFromDate(node.heartbeatAt),
        })),
      };
    },
  };
}
