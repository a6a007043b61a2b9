// Create, delete and query tables (/<account>/Tables, /<account>/Tables('name')).

#include "engine/table_name.h"
#include "sidecar/rest/call.h"

namespace sidetable::sidecar::rest {
namespace {

void Create(Call& c) {
  auto name = ParseTableName(c.req.body);
  if (!name.ok()) return SendStatus(c, name.status());
  wire::Request r;
  r.op = wire::Op::kCreateTable;
  r.table = *name;
  std::string frame;
  std::string_view body;
  if (Status s = c.Execute(r, &frame, &body); !s.ok()) return SendStatus(c, s);
  c.res.set_header("Location", c.links.base + "/Tables(" + QuoteKey(*name) + ")");
  if (c.PrefersNoContent()) {
    c.res.status = 204;
    c.res.set_header("Preference-Applied", "return-no-content");
    return;
  }
  std::string out;
  AppendTable(*name, c.meta, c.links, true, &out);
  c.res.set_header("Preference-Applied", "return-content");
  SendJson(c, 201, std::move(out));
}

void DeleteTable(Call& c) {
  wire::Request r;
  r.op = wire::Op::kDeleteTable;
  r.table = c.path.table;
  std::string frame;
  std::string_view body;
  if (Status s = c.Execute(r, &frame, &body); !s.ok()) return SendStatus(c, s);
  c.res.status = 204;
}

// Query Tables, or one table by name (GET Tables('name')).
void QueryTables(Call& c, bool one) {
  wire::Request r;
  r.op = wire::Op::kListTables;
  if (one) {
    // Table names compare case-insensitively ('caset' is the table created
    // as 'CaseT'), which a $filter on TableName does not: the listing is
    // started at the name instead (a continuation is the case-folded name,
    // engine/table_name.h), and its first table is the one if it exists.
    r.next_table = c.path.table;
    r.top = 1;
  } else {
    if (auto it = c.query.find("$filter"); it != c.query.end()) r.filter = it->second;
    if (!ParseTop(c, &r)) return;
    if (auto it = c.query.find("NextTableName"); it != c.query.end()) {
      auto next = DecodeToken(it->second);
      if (!next) return SendError(c, 400, "InvalidInput", "NextTableName is not a continuation token of this service");
      r.next_table = *next;
    }
  }
  // An account SAS listing tables covers every table, but its token has
  // no entity permission to make them visible: the listing is its right.
  if (c.sas_lists_tables && !one) c.principal.reset();
  std::string frame;
  std::string_view body;
  if (Status s = c.Execute(r, &frame, &body); !s.ok()) return SendStatus(c, s);
  wire::TablesReply reply;
  if (Status s = wire::DecodeTables(body, &reply); !s.ok()) return SendStatus(c, s);
  if (one) {
    if (reply.tables.empty() || !TableNameEquals(reply.tables[0], c.path.table)) {
      return SendError(c, 404, "TableNotFound", "The table specified does not exist.");
    }
    std::string out;
    AppendTable(reply.tables[0], c.meta, c.links, true, &out);
    return SendJson(c, 200, std::move(out));
  }
  if (reply.next_table) c.res.set_header("x-ms-continuation-NextTableName", EncodeToken(*reply.next_table));
  SendJson(c, 200, TablePage(reply.tables, c.meta, c.links));
}

}  // namespace

void ServeTables(Call& c) {
  const bool one = c.path.resource == Resource::kTable;
  if (c.method == "GET") return QueryTables(c, one);
  if (c.method == "POST" && !one) return Create(c);
  if (c.method == "DELETE" && one) return DeleteTable(c);
  SendError(c, 405, "UnsupportedHttpVerb", "The resource doesn't support specified Http Verb.");
}

}  // namespace sidetable::sidecar::rest
