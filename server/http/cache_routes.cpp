// POST /reset_prefix_cache: drops every cached prefix block no running request holds (vLLM's
// route of the same name). 200 {"success": true} when the prefix cache is empty afterwards,
// {"success": false} when running requests still hold cached blocks (those stay). With KV events
// on, subscribers get AllBlocksCleared, or BlockRemoved for the blocks dropped.
#include "server/http/http_context.h"

namespace llmserve {

void register_cache_routes(httplib::Server& server, HttpContext& ctx) {
  server.Post("/reset_prefix_cache", [&ctx](const httplib::Request&, httplib::Response& res) {
    const int retry = ctx.state.options().retry_after_seconds;
    Engine* engine = ctx.state.engine();
    if (engine == nullptr) return send_status_error(res, unavailable("no model loaded"), retry);
    auto cleared = engine->reset_prefix_cache();
    if (!cleared.is_ok()) return send_status_error(res, cleared.status(), retry);
    send_json(res, 200, {{"success", *cleared}});
  });
}

}  // namespace llmserve
