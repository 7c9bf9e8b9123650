/* runtime/dlfile.c: opening a shared object named by a file path
 * (runtime/dlfile.h).
 *
 * The ELF check reads the file header, the program headers and the section
 * headers with pread and requires each to lie within the file, and each
 * loadable part (a segment's file bytes, a section's bytes other than
 * NOBITS) too: that is what dlopen maps and reads, and a part past the
 * end of the file is a page the kernel cannot back (SIGBUS on first
 * touch). It also requires the class, byte order and machine of this
 * process and the type of a shared object, so that a wrong file gets a
 * sentence rather than the loader's terse one. The file may still change
 * between the check and dlopen; the check is for damaged files, not for
 * files someone rewrites meanwhile.
 */
#define _GNU_SOURCE /* pread, O_CLOEXEC */
#include "runtime/dlfile.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if UINTPTR_MAX > 0xffffffffu
#define DL_CLASS ELFCLASS64
typedef Elf64_Ehdr dl_ehdr;
typedef Elf64_Phdr dl_phdr;
typedef Elf64_Shdr dl_shdr;
#else
#define DL_CLASS ELFCLASS32
typedef Elf32_Ehdr dl_ehdr;
typedef Elf32_Phdr dl_phdr;
typedef Elf32_Shdr dl_shdr;
#endif

#if defined(__x86_64__)
#define DL_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define DL_MACHINE EM_AARCH64
#elif defined(__powerpc64__)
#define DL_MACHINE EM_PPC64
#else
#define DL_MACHINE EM_NONE /* not checked: the loader says */
#endif

static bool say(char *why, size_t whysize, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (whysize)
    vsnprintf(why, whysize, fmt, ap);
  va_end(ap);
  return false;
}

/* Whether [off, off + len) lies within a file of `size` bytes. */
static bool within(uint64_t off, uint64_t len, uint64_t size) {
  return off <= size && len <= size - off;
}

static bool read_at(int fd, void *buf, size_t len, uint64_t off) {
  char *p = buf;
  while (len) {
    ssize_t n = pread(fd, p, len, (off_t)off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    len -= (size_t)n;
    off += (uint64_t)n;
  }
  return true;
}

bool rt_elf_complete(int fd, uint64_t size, char *why, size_t whysize) {
  dl_ehdr eh;
  if (size < sizeof eh || !read_at(fd, &eh, sizeof eh, 0) || memcmp(eh.e_ident, ELFMAG, SELFMAG))
    return say(why, whysize, "not an ELF file%s",
               size < sizeof eh ? " (shorter than an ELF header)" : "");
  int one = 1;
  unsigned char order = *(unsigned char *)&one ? ELFDATA2LSB : ELFDATA2MSB;
  if (eh.e_ident[EI_CLASS] != DL_CLASS || eh.e_ident[EI_DATA] != order)
    return say(why, whysize, "an ELF file for another kind of machine (%d-bit or other byte order)",
               eh.e_ident[EI_CLASS] == ELFCLASS32 ? 32 : 64);
  if (DL_MACHINE != EM_NONE && eh.e_machine != DL_MACHINE)
    return say(why, whysize, "an ELF file for another processor (e_machine %u)",
               (unsigned)eh.e_machine);
  if (eh.e_type != ET_DYN)
    return say(why, whysize, "an ELF file but not a shared object (e_type %u)",
               (unsigned)eh.e_type);
  if (eh.e_phnum == 0 || eh.e_phentsize != sizeof(dl_phdr) ||
      !within(eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(dl_phdr), size))
    return say(why, whysize,
               "damaged: its program headers lie past the end of the file (%llu bytes; truncated?)",
               (unsigned long long)size);
  size_t nph = eh.e_phnum;
  dl_phdr *ph = malloc(nph * sizeof *ph);
  if (!ph || !read_at(fd, ph, nph * sizeof *ph, eh.e_phoff)) {
    free(ph);
    return say(why, whysize, "cannot read its program headers");
  }
  bool ok = true;
  for (size_t i = 0; ok && i < nph; i++)
    if (ph[i].p_type == PT_LOAD || ph[i].p_type == PT_DYNAMIC || ph[i].p_type == PT_INTERP ||
        ph[i].p_type == PT_NOTE || ph[i].p_type == PT_GNU_EH_FRAME)
      if (!within(ph[i].p_offset, ph[i].p_filesz, size))
        ok = say(why, whysize,
                 "damaged: segment %zu (bytes %llu to %llu) lies past the end of the file (%llu "
                 "bytes; truncated?)",
                 i, (unsigned long long)ph[i].p_offset,
                 (unsigned long long)ph[i].p_offset + ph[i].p_filesz, (unsigned long long)size);
  free(ph);
  if (!ok)
    return false;
  if (eh.e_shoff == 0) /* no section headers: nothing more to check */
    return true;
  uint64_t nsh = eh.e_shnum;
  if (eh.e_shentsize != sizeof(dl_shdr) || !within(eh.e_shoff, sizeof(dl_shdr), size))
    return say(why, whysize,
               "damaged: its section headers lie past the end of the file (%llu bytes; truncated?)",
               (unsigned long long)size);
  dl_shdr first;
  if (!read_at(fd, &first, sizeof first, eh.e_shoff))
    return say(why, whysize, "cannot read its section headers");
  if (nsh == 0) /* extended numbering: the count is in section 0 */
    nsh = first.sh_size;
  if (!within(eh.e_shoff, nsh * sizeof(dl_shdr), size) || nsh > size / sizeof(dl_shdr))
    return say(why, whysize,
               "damaged: its section headers lie past the end of the file (%llu bytes; truncated?)",
               (unsigned long long)size);
  dl_shdr *sh = malloc((size_t)nsh * sizeof *sh);
  if (!sh || !read_at(fd, sh, (size_t)nsh * sizeof *sh, eh.e_shoff)) {
    free(sh);
    return say(why, whysize, "cannot read its section headers");
  }
  for (uint64_t i = 0; ok && i < nsh; i++)
    if (sh[i].sh_type != SHT_NOBITS && sh[i].sh_type != SHT_NULL &&
        !within(sh[i].sh_offset, sh[i].sh_size, size))
      ok = say(why, whysize,
               "damaged: section %llu (bytes %llu to %llu) lies past the end of the file (%llu "
               "bytes; truncated?)",
               (unsigned long long)i, (unsigned long long)sh[i].sh_offset,
               (unsigned long long)sh[i].sh_offset + sh[i].sh_size, (unsigned long long)size);
  free(sh);
  return ok;
}

ac_status rt_dlopen_file(const char *path, int flags, void **out, char *why, size_t whysize) {
  *out = NULL;
  if (whysize)
    why[0] = 0;
  /* "libfoo.so" is the file here, as fopen would take it: dlopen would
   * search the library path for a name without '/' */
  size_t n = strlen(path);
  char *name = malloc(n + 3);
  if (!name) {
    say(why, whysize, "cannot load %s: out of memory", path);
    return AC_ERR_NOMEM;
  }
  snprintf(name, n + 3, "%s%s", strchr(path, '/') ? "" : "./", path);
  /* O_NONBLOCK: opening a FIFO must not wait for a writer */
  int fd = open(name, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  struct stat st;
  ac_status res = AC_OK;
  char reason[256];
  if (fd < 0) {
    say(why, whysize, "cannot load %s: %s", path, strerror(errno));
    res = AC_ERR_IO;
  } else if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    say(why, whysize, "cannot load %s: not a regular file", path);
    res = AC_ERR_INVALID;
  } else if (!rt_elf_complete(fd, (uint64_t)st.st_size, reason, sizeof reason)) {
    say(why, whysize, "cannot load %s: %s", path, reason);
    res = AC_ERR_INVALID;
  }
  if (fd >= 0)
    close(fd);
  if (res == AC_OK) {
    *out = dlopen(name, flags);
    if (!*out) {
      const char *e = dlerror();
      say(why, whysize, "cannot load %s: %s", path, e ? e : "dlopen failed");
      res = AC_ERR_IO;
    }
  }
  free(name);
  return res;
}
