/*
 * An execution's answer. What a cell or a command writes to its stdout and
 * stderr is forwarded to the daemon as it comes (capture), each stream up
 * to max_output, as text: bytes that are not UTF-8 become U+FFFD, as
 * Python's "replace" decoder makes them. max_answer bounds the whole
 * answer: output as it streams, then the error, the result and the
 * outputs draw on it (budget); what does not fit is dropped and the
 * answer says "truncated". The same rules as _sandboxd_answer.py.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "supervisor.h"

/* seq_len is the length of the UTF-8 sequence lead byte c starts, 0 if it
 * starts none. */
static int seq_len(unsigned char c)
{
	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		return 2;
	if (c >= 0xE0 && c <= 0xEF)
		return 3;
	if (c >= 0xF0 && c <= 0xF4)
		return 4;
	return 0;
}

/* cont_ok reports whether c may be the i-th byte (from 1) of the sequence
 * lead starts: the ranges of Unicode's table 3-7 (no overlongs, no
 * surrogates, nothing past U+10FFFF). */
static bool cont_ok(unsigned char lead, int i, unsigned char c)
{
	if (i == 1) {
		if (lead == 0xE0)
			return c >= 0xA0 && c <= 0xBF;
		if (lead == 0xED)
			return c >= 0x80 && c <= 0x9F;
		if (lead == 0xF0)
			return c >= 0x90 && c <= 0xBF;
		if (lead == 0xF4)
			return c >= 0x80 && c <= 0x8F;
	}
	return c >= 0x80 && c <= 0xBF;
}

/* utf8_valid_prefix is how many bytes of s, from its start, are whole valid
 * sequences. *bad is how many bytes after them make one invalid maximal
 * subpart (to replace with U+FFFD), or 0 if they are an incomplete
 * sequence cut by the end of s (or s ended). */
size_t utf8_valid_prefix(const unsigned char *s, size_t n, size_t *bad)
{
	size_t i = 0;
	*bad = 0;
	while (i < n) {
		int len = seq_len(s[i]);
		if (len == 0) {
			*bad = 1;
			return i;
		}
		int k = 1;
		while (k < len && i + k < n && cont_ok(s[i], k, s[i + k]))
			k++;
		if (k < len) {
			if (i + k < n)
				*bad = k; /* an invalid continuation: the subpart so far */
			return i;
		}
		i += len;
	}
	return i;
}

static void budget_take_bytes(struct budget *b, size_t n, size_t *k)
{
	*k = (long long)n < b->left ? n : (size_t)b->left;
	b->left -= *k;
	if (*k < n)
		b->cut = true;
}

void budget_init(struct budget *b, long long n)
{
	b->left = n > 0 ? n : 0;
	b->cut = false;
}

/* cut_utf8 is how many bytes of s (valid UTF-8) remain when it is cut to k
 * at a character boundary. */
static size_t cut_utf8(const char *s, size_t k)
{
	size_t bad, v = utf8_valid_prefix((const unsigned char *)s, k, &bad);
	return v;
}

/* budget_text is s (valid UTF-8), cut to what fits, as a JSON string. */
json_t *budget_text(struct budget *b, const char *s, size_t n)
{
	size_t k;
	budget_take_bytes(b, n, &k);
	if (k < n)
		k = cut_utf8(s, k);
	return json_stringn(s, k);
}

/* budget_error is an exception's fields, each cut to what fits (the name to
 * 256 characters, not counted), or NULL if e is no object. */
json_t *budget_error(struct budget *b, json_t *e)
{
	if (!json_is_object(e))
		return NULL;
	json_t *out = json_object();
	const char *keys[] = {"name", "value", "traceback"};
	for (int i = 0; i < 3; i++) {
		json_t *v = json_object_get(e, keys[i]);
		const char *s = json_is_string(v) ? json_string_value(v) : "";
		size_t n = json_is_string(v) ? json_string_length(v) : 0;
		if (i == 0) {
			size_t chars = 0, j = 0;
			while (j < n && chars < 256) {
				int len = seq_len((unsigned char)s[j]);
				j += len ? len : 1;
				chars++;
			}
			if (j < n)
				b->cut = true;
			json_object_set_new(out, keys[i], json_stringn(s, j < n ? j : n));
		} else {
			json_object_set_new(out, keys[i], budget_text(b, s, n));
		}
	}
	return out;
}

/* budget_output is o, well-formed (only the fields and types of an output),
 * if it fits whole (it is then counted); else NULL. */
json_t *budget_output(struct budget *b, json_t *o)
{
	json_t *mime = json_object_get(o, "mime"), *data = json_object_get(o, "data");
	if (!json_is_object(o) || !json_is_string(mime) || !json_is_string(data))
		return NULL;
	long long size = json_string_length(mime) + json_string_length(data);
	json_t *out = json_pack("{s:O, s:O}", "mime", mime, "data", data);
	json_t *bundle = json_object_get(o, "bundle");
	if (json_is_object(bundle)) {
		json_t *clean = json_object();
		const char *k;
		json_t *v;
		json_object_foreach(bundle, k, v) {
			if (!json_is_string(v))
				continue;
			json_object_set(clean, k, v);
			size += strlen(k) + json_string_length(v);
		}
		if (json_object_size(clean) > 0)
			json_object_set(out, "bundle", clean);
		json_decref(clean);
	}
	if (size > b->left) {
		b->cut = true;
		json_decref(out);
		return NULL;
	}
	b->left -= size;
	return out;
}

json_t *budget_outputs(struct budget *b, json_t *outs)
{
	json_t *kept = json_array();
	size_t i;
	json_t *o;
	if (json_is_array(outs))
		json_array_foreach(outs, i, o) {
			json_t *c = budget_output(b, o);
			if (c)
				json_array_append_new(kept, c);
		}
	return kept;
}

void capture_init(struct capture *c, const char *kind, struct daemon *d, long long limit, struct budget *b)
{
	memset(c, 0, sizeof *c);
	c->kind = kind;
	c->d = d;
	c->limit = limit;
	c->b = b;
}

static void send_text(struct capture *c, const char *s, size_t n)
{
	if (!c->d || n == 0)
		return;
	json_t *m = json_object();
	json_object_set_new(m, "type", json_string(c->kind));
	json_object_set_new(m, "data", json_stringn(s, n));
	daemon_send(c->d, m);
	json_decref(m);
}

/* decode writes what was pending and data, bytes, to out as valid UTF-8,
 * keeping an incomplete last sequence in c->pend for the next chunk (or,
 * final, replacing it). out has room for three times both. */
static size_t decode(struct capture *c, const unsigned char *data, size_t n, char *out, bool final)
{
	size_t total = c->npend + n, i = 0, o = 0;
	unsigned char *in = malloc(total + 1);
	if (!in)
		abort();
	memcpy(in, c->pend, c->npend);
	if (n)
		memcpy(in + c->npend, data, n);
	c->npend = 0;
	while (i < total) {
		size_t bad, v = utf8_valid_prefix(in + i, total - i, &bad);
		memcpy(out + o, in + i, v);
		o += v;
		i += v;
		if (bad == 0 && i < total && !final) {
			c->npend = total - i; /* at most 3 */
			memcpy(c->pend, in + i, c->npend);
			break;
		}
		if (i < total) {
			memcpy(out + o, "\xEF\xBF\xBD", 3);
			o += 3;
			i += bad ? bad : total - i;
		}
	}
	free(in);
	return o;
}

void capture_feed(struct capture *c, const unsigned char *data, size_t n)
{
	long long room = c->limit - c->sent;
	size_t k = n;
	if (room < (long long)k)
		k = room > 0 ? room : 0;
	budget_take_bytes(c->b, k, &k);
	if (k < n)
		c->truncated = true;
	if (k == 0)
		return;
	c->sent += k;
	char *out = malloc((k + 4) * 3);
	if (!out)
		abort();
	send_text(c, out, decode(c, data, k, out, false));
	free(out);
}

void capture_finish(struct capture *c)
{
	char out[32];
	if (c->npend > 0)
		send_text(c, out, decode(c, NULL, 0, out, true));
}

bool drain(int fd, struct capture *c)
{
	unsigned char buf[READ_CHUNK];
	for (;;) {
		ssize_t k = read(fd, buf, sizeof buf);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return errno == EAGAIN;
		if (k == 0)
			return false;
		if (c)
			capture_feed(c, buf, k);
	}
}

void discard(int fd)
{
	drain(fd, NULL);
}

json_t *done_new(void)
{
	return json_pack("{s:s, s:i, s:n, s:n, s:[], s:b, s:b}", "status", SBX_STATUS_OK, "exit_code", 0, "result", "error",
			 "outputs", "truncated", 0, "state_reset", 0);
}
