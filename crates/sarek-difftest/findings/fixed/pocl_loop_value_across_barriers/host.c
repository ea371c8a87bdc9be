// Host for the PoCL barrier reproduction (run.sh): build options from $OPTS.
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
// usage: host FILE.cl N LOCAL ; kernel k(global int* in, global int* out); expected via ref kernel "ref" if present else prints
int main(int argc, char** argv) {
  FILE* f = fopen(argv[1], "rb"); fseek(f,0,SEEK_END); long n=ftell(f); fseek(f,0,SEEK_SET);
  char* src = malloc(n+1); fread(src,1,n,f); src[n]=0; fclose(f);
  int N = atoi(argv[2]); size_t L = atoi(argv[3]);
  cl_platform_id p; clGetPlatformIDs(1,&p,NULL); cl_device_id d; clGetDeviceIDs(p,CL_DEVICE_TYPE_ALL,1,&d,NULL);
  cl_int e; cl_context c = clCreateContext(NULL,1,&d,NULL,NULL,&e); cl_command_queue q = clCreateCommandQueue(c,d,0,&e);
  cl_program pr = clCreateProgramWithSource(c,1,(const char**)&src,NULL,&e);
  e = clBuildProgram(pr,1,&d,getenv("OPTS")?getenv("OPTS"):"",NULL,NULL);
  if (e) { char log[20000]; clGetProgramBuildInfo(pr,d,CL_PROGRAM_BUILD_LOG,sizeof log,log,NULL); printf("build %d %s\n",e,log); return 1; }
  int* in = malloc(N*4); int* out = malloc(N*4); int* out2 = malloc(N*4);
  unsigned s = 12345; for (int i=0;i<N;i++){ s = s*1103515245u+12345u; in[i] = (int)(s>>8); }
  const char* names[2] = {"k","ref"}; int* outs[2] = {out,out2};
  for (int w=0; w<2; w++) {
    cl_kernel k = clCreateKernel(pr,names[w],&e); if (e) { printf("no kernel %s\n", names[w]); return 1; }
    cl_mem bi = clCreateBuffer(c,CL_MEM_READ_WRITE|CL_MEM_COPY_HOST_PTR,N*4,in,&e);
    cl_mem bo = clCreateBuffer(c,CL_MEM_READ_WRITE,N*4,NULL,&e);
    clSetKernelArg(k,0,sizeof bi,&bi); clSetKernelArg(k,1,sizeof bo,&bo);
    size_t G = N; e = clEnqueueNDRangeKernel(q,k,1,NULL,&G,&L,0,NULL,NULL); if (e) { printf("enqueue %d\n", e); return 1; }
    clEnqueueReadBuffer(q,bo,CL_TRUE,0,N*4,outs[w],0,NULL,NULL);
  }
  int bad=0; for (int i=0;i<N;i++) if (out[i]!=out2[i]) { if (bad<4) printf("  [%d] in=%d got %d want %d\n", i, in[i], out[i], out2[i]); bad++; }
  printf("%s: %d of %d differ\n", argv[1], bad, N); return bad!=0;
}
