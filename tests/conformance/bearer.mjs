// Preloaded into the MCP conformance suite (`node --import`): every HTTP
// request it makes to `toolgate mcp`'s listener ($TOOLGATE_PROXY, an
// origin such as http://127.0.0.1:8788) carries the proxy's secret as
// `Authorization: Bearer $TOOLGATE_TOKEN`, as a client configured with it
// sends (the suite has no option for headers). Nothing else is changed:
// Host and Origin are the suite's own, so its DNS-rebinding scenario
// still tests the listener. The suite's own undici ($TOOLGATE_UNDICI)
// sets the dispatcher that its requests and Node's fetch both use.
const { Agent, setGlobalDispatcher } = await import(process.env.TOOLGATE_UNDICI);
const origin = new URL(process.env.TOOLGATE_PROXY).origin;
const secret = `Bearer ${process.env.TOOLGATE_TOKEN}`;

function withSecret(headers) {
  if (Array.isArray(headers)) {
    return [...headers, 'authorization', secret];
  }
  if (headers && typeof headers[Symbol.iterator] === 'function' && typeof headers !== 'string') {
    return [...[...headers].flat(), 'authorization', secret];
  }
  return { ...(headers ?? {}), authorization: secret };
}

setGlobalDispatcher(
  new Agent().compose((dispatch) => (options, handler) => {
    const to = new URL(String(options.origin)).origin;
    return dispatch(to === origin ? { ...options, headers: withSecret(options.headers) } : options, handler);
  }),
);
