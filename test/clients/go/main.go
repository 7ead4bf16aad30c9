// A gRPC client of the gateway built from code that buf generates out of proto/gw with
// test/clients/buf.gen.go.yaml; test/integration/generated-clients.test.ts runs it and asserts on the JSON it
// prints. It reads the gateway's address, an admin session token, a virtual key and the values to send from
// the environment.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	catalogv1 "gw/gen/go/gw/catalog/v1"
	inferencev1 "gw/gen/go/gw/inference/v1"
)

type rpcError struct {
	Code    uint32 `json:"code"`
	Message string `json:"message"`
}

func errorOf(err error) *rpcError {
	if err == nil {
		return nil
	}
	st, _ := status.FromError(err)
	return &rpcError{Code: uint32(st.Code()), Message: st.Message()}
}

func must(what string, err error) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
		os.Exit(1)
	}
}

func main() {
	timeout, err := strconv.Atoi(os.Getenv("GW_TIMEOUT_SECONDS"))
	must("GW_TIMEOUT_SECONDS", err)

	// A bound on the whole run, so that a gateway that never answers fails the test instead of hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// WithInsecure rather than insecure.NewCredentials: Debian 12's grpc-go (1.33) predates that package.
	conn, err := grpc.DialContext(ctx, os.Getenv("GW_ADDRESS"), grpc.WithInsecure())
	must("dial", err)
	defer conn.Close()

	admin := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+os.Getenv("GW_ADMIN_TOKEN"))
	caller := metadata.AppendToOutgoingContext(ctx, "x-gw-vk", os.Getenv("GW_VIRTUAL_KEY"))
	providers := catalogv1.NewProviderServiceClient(conn)
	tools := inferencev1.NewMcpToolServiceClient(conn)
	out := map[string]interface{}{}

	listed, err := providers.ListProviders(admin, &catalogv1.ListProvidersRequest{})
	must("ListProviders", err)
	names := []string{}
	for _, p := range listed.GetProviders() {
		names = append(names, p.GetName())
	}
	out["list"] = map[string]interface{}{"names": names}

	updated, err := providers.UpdateProvider(admin, &catalogv1.UpdateProviderRequest{
		Name:       "openai",
		Provider:   &catalogv1.Provider{NetworkConfig: &catalogv1.NetworkConfig{DefaultRequestTimeoutInSeconds: int32(timeout)}},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"network_config.default_request_timeout_in_seconds"}},
	})
	must("UpdateProvider", err)
	network := updated.GetProvider().GetNetworkConfig()
	out["update"] = map[string]interface{}{
		"base_url":                           network.GetBaseUrl(),
		"default_request_timeout_in_seconds": network.GetDefaultRequestTimeoutInSeconds(),
		"stream_idle_timeout_in_seconds":     network.GetStreamIdleTimeoutInSeconds(),
		"keys":                               len(updated.GetProvider().GetKeys()),
	}

	arguments, err := json.Marshal(map[string]string{"text": os.Getenv("GW_TOOL_TEXT")})
	must("arguments", err)
	result, err := tools.ExecuteTool(caller, &inferencev1.ExecuteToolRequest{
		Id:       "call_go",
		Type:     "function",
		Function: &inferencev1.FunctionCall{Name: os.Getenv("GW_TOOL"), Arguments: string(arguments)},
	})
	must("ExecuteTool", err)
	out["tool"] = map[string]interface{}{"role": result.GetRole(), "tool_call_id": result.GetToolCallId(), "content": result.GetContent()}

	_, err = providers.GetProvider(admin, &catalogv1.GetProviderRequest{Name: "no-such-provider"})
	out["not_found"] = errorOf(err)

	_, err = providers.UpdateProvider(admin, &catalogv1.UpdateProviderRequest{
		Name:       "openai",
		Provider:   &catalogv1.Provider{},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"network_config.base_uri"}},
	})
	out["invalid_argument"] = errorOf(err)

	_, err = providers.ListProviders(ctx, &catalogv1.ListProvidersRequest{})
	out["unauthenticated"] = errorOf(err)

	encoded, err := json.Marshal(out)
	must("encode", err)
	fmt.Println(string(encoded))
}
