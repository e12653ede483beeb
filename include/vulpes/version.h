/* vulpes: the library's version. */
#ifndef VULPES_VERSION_H
#define VULPES_VERSION_H

/* The library's version, "MAJOR.MINOR.PATCH" (the CMake project version). */
#define VP_VERSION_STRING "0.1.0"

#endif /* VULPES_VERSION_H */
