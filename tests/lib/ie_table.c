// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ie_table - test helper: prints the profile's information model
 * (RM_IPFIX_IES in rocemeter/ipfix_ie.h) and the qualification flags
 * (RM_FLAGS in rocemeter/seqobs.h) as one JSON object on stdout, straight
 * from the headers, for tests/unit/test_ie_model.py to compare with
 * docs/rocemeter-ie.xml. No options; exit 0, or 1 if the JSON cannot be built.
 */
#include <jansson.h>
#include <stdio.h>

#include "rocemeter/ipfix_ie.h"
#include "rocemeter/seqobs.h"

static const char *in_name(enum rm_ie_in in)
{
	switch (in) {
	case RM_IE_IN_ALL:
		return "all";
	case RM_IE_IN_IPV4:
		return "ipv4";
	case RM_IE_IN_IPV6:
		return "ipv6";
	case RM_IE_IN_VLAN:
		return "vlan";
	}
	return "?";
}

int main(void)
{
	json_t *ies = json_array(), *flags = json_array(), *out;

#define IE_(stem, name, pen, type, octets, sem, units, key, in, member)                                               \
	json_array_append_new(ies, json_pack("{s:s, s:i, s:b, s:s, s:i, s:s, s:s, s:b, s:s, s:s}", "name", name,      \
					     "number", RM_IE_NUMBER(stem, pen), "enterprise", RM_IE_##pen, "type",    \
					     #type, "octets", octets, "semantics", #sem, "units", #units, "key", key, \
					     "in", in_name(RM_IE_IN_##in), "member", #member));
	RM_IPFIX_IES(IE_)
#undef IE_
#define FLAG_(suffix, mask, name, meaning) \
	json_array_append_new(flags, json_pack("{s:s, s:i, s:s}", "name", name, "mask", mask, "meaning", meaning));
	RM_FLAGS(FLAG_)
#undef FLAG_

	out = json_pack("{s:I, s:o, s:o}", "default_pen", (json_int_t)RM_IPFIX_DEFAULT_PEN, "elements", ies, "flags",
			flags);
	if (!out || json_array_size(ies) != RM_PF__COUNT || json_dumpf(out, stdout, JSON_INDENT(1)) != 0) {
		fprintf(stderr, "ie_table: cannot build the JSON\n");
		return 1;
	}
	putchar('\n');
	json_decref(out);
	return 0;
}
