/**
 * The Connect transport the REST bridge and the server-rendered pages call RPCs through: it calls the
 * service implementations in this process directly, running the same interceptors around them as a served
 * call, in the same order, on a handler context built the way connect-es builds one. connect-es's router
 * transport would serialize each request and answer to binary and back and emulate an HTTP exchange, then
 * abort every call's context when it ends (an AbortError with its stack per call); a message here is passed
 * as it is. Errors become ConnectErrors exactly as a served call's do (`ConnectError.from`).
 */
import { create, type DescMessage, type DescMethod, type DescService, type MessageInitShape } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createHandlerContext,
  createMethodImplSpec,
  createServiceImplSpec,
  type ConnectRouter,
  type HandlerContext,
  type Interceptor,
  type MethodImpl,
  type MethodImplSpec,
  type ServiceImpl,
  type StreamResponse,
  type Transport,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";

/** An interceptor's `next`: the call it wraps. */
type Next = Parameters<Interceptor>[0];

/** What the router transport named a call's URL by: the path is the method's, the origin none that exists. */
const BASE_URL = "https://in-memory";

/**
 * A transport over the services that `routes` registers, with `interceptors` around every call. Streaming
 * methods are refused: nothing in the process calls one.
 */
export function createInProcessTransport(routes: (router: ConnectRouter) => void, interceptors: readonly Interceptor[]): Transport {
  const methods = registeredMethods(routes, interceptors);
  return {
    async unary(method, signal, timeoutMs, header, input, contextValues) {
      const registered = methods.get(method);
      const spec = registered?.spec;
      if (registered === undefined || spec?.kind !== "unary") throw new ConnectError(`${method.parent.typeName}.${method.name} is not served in this process`, Code.Unimplemented);
      const context = createHandlerContext({
        service: method.parent,
        method,
        protocolName: "connect",
        requestMethod: "POST",
        url: `${BASE_URL}/${method.parent.typeName}/${method.name}`,
        ...(timeoutMs === undefined ? {} : { timeoutMs }),
        ...(signal === undefined ? {} : { requestSignal: signal }),
        ...(header === undefined ? {} : { requestHeader: header }),
        ...(contextValues === undefined ? {} : { contextValues }),
      });
      type I = typeof method.input;
      type O = typeof method.output;
      const invoke = async (req: UnaryRequest<I, O>): Promise<UnaryResponse<I, O>> => {
        // As connect-es does: the implementation sees what the interceptors made of the request.
        const callContext: HandlerContext = { ...context, service: req.service, requestHeader: req.header, signal: req.signal, values: req.contextValues };
        const output = await spec.impl(req.message, callContext);
        return { stream: false, service: method.parent, method, header: context.responseHeader, trailer: context.responseTrailer, message: create(method.output, output as MessageInitShape<O>) };
      };
      // The first interceptor is the outermost, as connect-es applies them. Interceptors take any call's
      // function; this one is only ever given the unary request built below.
      const next = registered.interceptors.reduceRight<Next>((inner, interceptor) => interceptor(inner), invoke as unknown as Next);
      try {
        return (await next({
          stream: false,
          service: method.parent,
          method,
          requestMethod: context.requestMethod,
          url: context.url,
          signal: context.signal,
          header: context.requestHeader,
          contextValues: context.values,
          message: create(method.input, input),
        })) as UnaryResponse<I, O>;
      } catch (err) {
        throw ConnectError.from(err);
      }
    },
    stream<I extends DescMessage, O extends DescMessage>(method: DescMethod): Promise<StreamResponse<I, O>> {
      return Promise.reject(new ConnectError(`${method.parent.typeName}.${method.name} streams, and streaming calls are not made in this process`, Code.Unimplemented));
    },
  };
}

/** A registered method: its implementation and the interceptors around it. */
interface Registered {
  spec: MethodImplSpec;
  interceptors: readonly Interceptor[];
}

/**
 * Every method `routes` registers, with its implementation and interceptors: the router's, or those its
 * service was registered with, which replace them as connect-es's router does.
 */
function registeredMethods(routes: (router: ConnectRouter) => void, routerInterceptors: readonly Interceptor[]): Map<DescMethod, Registered> {
  const methods = new Map<DescMethod, Registered>();
  const recorder: ConnectRouter = {
    handlers: [],
    service(service: DescService, implementation: Partial<ServiceImpl<DescService>>, options?: HandlerOptions) {
      const interceptors = interceptorsOf(service.typeName, options, routerInterceptors);
      const spec = createServiceImplSpec(service, implementation);
      for (const method of service.methods) {
        const impl = spec.methods[method.localName];
        if (impl !== undefined) methods.set(method, { spec: impl, interceptors });
      }
      return this;
    },
    rpc<M extends DescMethod>(method: M, impl: MethodImpl<M>, options?: HandlerOptions) {
      const interceptors = interceptorsOf(`${method.parent.typeName}.${method.name}`, options, routerInterceptors);
      methods.set(method, { spec: createMethodImplSpec(method, impl), interceptors });
      return this;
    },
  };
  routes(recorder);
  return methods;
}

/** What a registration may pass: its own interceptors. */
type HandlerOptions = { interceptors?: Interceptor[] } & Record<string, unknown>;

/**
 * A registration's interceptors; any other handler option (limits, compression) would be skipped here, so
 * it is refused instead.
 */
function interceptorsOf(name: string, options: HandlerOptions | undefined, routerInterceptors: readonly Interceptor[]): readonly Interceptor[] {
  const other = Object.keys(options ?? {}).filter((key) => key !== "interceptors");
  if (other.length > 0) throw new Error(`${name} is registered with handler options (${other.join(", ")}) that in-process calls do not apply`);
  return options?.interceptors ?? routerInterceptors;
}
